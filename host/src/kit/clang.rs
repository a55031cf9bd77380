//! `caseload plugin build` for C and C++: the world's bindings from wit-bindgen's C
//! generator, clang for `wasm32-wasi` with Debian's wasi-libc (and libc++ for C++), and the
//! module made a component with the WASI preview-1 adapter, all inside `caseload` but the
//! compiler.
//!
//! ```text
//! wit/*.wit ──wit-bindgen-c──▶ target/bindings/{plugin.h, plugin.c, plugin_component_type.o}
//! schema/*.schema.json ──────▶ target/bindings/schemas.h (INPUT_SCHEMA, OUTPUT_SCHEMA)
//! src/*.c | src/*.cpp ──clang(++) --target=wasm32-wasi -mexec-model=reactor──▶ target/NAME.core.wasm
//! NAME.core.wasm + wasi_snapshot_preview1 reactor adapter ──wit-component──▶ target/NAME.wasm
//! ```
//!
//! The same sources give the same bytes (clang and the encoder are deterministic), so `watch`
//! does not reload an unchanged build and `publish` finds it published already.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use wit_bindgen_core::wit_parser::Resolve;

use crate::cli::Language;

/// The Debian packages a C build needs, and a C++ build beside them.
const C_PACKAGES: &str = "clang lld wasi-libc";
const CPP_PACKAGES: &str = "clang lld wasi-libc libc++-dev-wasm32 libclang-rt-dev-wasm32";

/// Builds the C or C++ project in `dir` into `target/<dir name>.wasm`.
pub(super) fn build_clang(dir: &Path, language: Language) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(dir)?;
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".to_owned());
    let target = dir.join("target");
    let bindings = target.join("bindings");
    std::fs::create_dir_all(&bindings)
        .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", bindings.display()))?;

    write_bindings(&dir, &bindings)?;
    write_schemas(&dir, &bindings)?;
    let sources = sources(&dir, language)?;

    // The bindings are C in both languages: compiled on their own, then linked in.
    let bindings_object = bindings.join("plugin.o");
    run_clang(
        language,
        Command::new("clang")
            .args(["--target=wasm32-wasi", "-O2", "-c"])
            .arg(bindings.join("plugin.c"))
            .arg("-o")
            .arg(&bindings_object),
    )?;
    let core = target.join(format!("{name}.core.wasm"));
    let compiler = match language {
        Language::Cpp => "clang++",
        _ => "clang",
    };
    let mut command = Command::new(compiler);
    command
        .args([
            "--target=wasm32-wasi",
            "-O2",
            "-mexec-model=reactor",
            "-Wall",
        ])
        .arg("-I")
        .arg(dir.join("src"))
        .arg("-I")
        .arg(&bindings);
    if language == Language::Cpp {
        // No exceptions (the WASI toolchains of Debian have no unwinder) and no threads.
        command.args(["-fno-exceptions", "-std=c++17"]);
    } else {
        command.arg("-std=c11");
    }
    command
        .args(&sources)
        .arg(&bindings_object)
        .arg(bindings.join("plugin_component_type.o"))
        .arg("-o")
        .arg(&core);
    run_clang(language, &mut command)?;

    let module = std::fs::read(&core)
        .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", core.display()))?;
    let component = componentize(&module)?;
    let path = target.join(format!("{name}.wasm"));
    // Written whole, then renamed: `watch` and a server's plugins directory never see half.
    let staging = target.join(format!(".{name}.wasm.tmp"));
    std::fs::write(&staging, component)
        .and_then(|()| std::fs::rename(&staging, &path))
        .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display()))?;
    Ok(path)
}

/// The world's C bindings, from the project's `wit/` (the world of the binary that wrote it).
fn write_bindings(dir: &Path, bindings: &Path) -> anyhow::Result<()> {
    let wit = dir.join("wit");
    if !wit.is_dir() {
        anyhow::bail!(
            "{} has no wit/ directory with the caseload:plugin world; `caseload plugin new \
             --lang c` writes it",
            dir.display()
        );
    }
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(&wit)
        .map_err(|error| anyhow::anyhow!("cannot read the WIT in {}: {error:#}", wit.display()))?;
    let world = resolve.select_world(&[package], Some("plugin"))?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)?;
    for (file, contents) in files.iter() {
        write_if_changed(&bindings.join(file), contents)?;
    }
    Ok(())
}

/// `schemas.h`: the two schemas as C strings, so that `describe` returns the files' text.
fn write_schemas(dir: &Path, bindings: &Path) -> anyhow::Result<()> {
    let mut header = String::from(
        "/* Written by `caseload plugin build` from schema/: edit those files, not this one. */\n\
         #ifndef SCHEMAS_H\n#define SCHEMAS_H\n",
    );
    for (constant, file) in [
        ("INPUT_SCHEMA", "input.schema.json"),
        ("OUTPUT_SCHEMA", "output.schema.json"),
    ] {
        let path = dir.join("schema").join(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", path.display()))?;
        if let Err(error) = serde_json::from_str::<serde_json::Value>(&text) {
            anyhow::bail!("{} is not JSON: {error}", path.display());
        }
        header.push_str(&format!(
            "static const char {constant}[] = {};\n",
            c_string(&text)
        ));
    }
    header.push_str("#endif\n");
    write_if_changed(&bindings.join("schemas.h"), header.as_bytes())
}

/// A C string literal of `text`, one source line per line of the text.
fn c_string(text: &str) -> String {
    let mut literal = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => literal.push_str("\\\""),
            '\\' => literal.push_str("\\\\"),
            '\n' => literal.push_str("\\n\"\n    \""),
            '\r' => literal.push_str("\\r"),
            '\t' => literal.push_str("\\t"),
            // `?` escaped so that no `??x` trigraph forms.
            '?' => literal.push_str("\\?"),
            character if (character as u32) < 0x20 => {
                literal.push_str(&format!("\\{:03o}", character as u32));
            }
            character => literal.push(character),
        }
    }
    literal.push('"');
    literal
}

/// Leaves a file alone when its contents would not change, so that its time stays too.
fn write_if_changed(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    std::fs::write(path, contents)
        .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display()))
}

/// The project's sources: every `src/*.c` (C) or `src/*.cpp`, `src/*.cc` and `src/*.c`
/// (C++), in name order.
fn sources(dir: &Path, language: Language) -> anyhow::Result<Vec<PathBuf>> {
    let extensions: &[&str] = match language {
        Language::Cpp => &["cpp", "cc", "cxx"],
        _ => &["c"],
    };
    let src = dir.join("src");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", src.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| extensions.contains(&extension))
        })
        .collect();
    sources.sort();
    if sources.is_empty() {
        anyhow::bail!("{} holds no source file", src.display());
    }
    Ok(sources)
}

/// Runs a compiler, its messages passed through to standard error; on failure, says which
/// Debian package is missing when its messages tell.
fn run_clang(language: Language, command: &mut Command) -> anyhow::Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let packages = match language {
        Language::Cpp => CPP_PACKAGES,
        _ => C_PACKAGES,
    };
    let output: Output =
        command
            .stdin(Stdio::null())
            .output()
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => anyhow::anyhow!(
                    "cannot run {program}: it is not installed; on Debian: apt install {packages}"
                ),
                _ => anyhow::anyhow!("cannot run {program}: {error}"),
            })?;
    let messages = String::from_utf8_lossy(&output.stderr);
    eprint!("{messages}{}", String::from_utf8_lossy(&output.stdout));
    if output.status.success() {
        return Ok(());
    }
    match missing_package(&messages) {
        Some(package) => anyhow::bail!(
            "{program} failed: Debian's {package} is missing (apt install {package}; a {} \
             plugin needs {packages})",
            if language == Language::Cpp {
                "C++"
            } else {
                "C"
            }
        ),
        None => anyhow::bail!("{program} failed (see above)"),
    }
}

/// The Debian package whose absence the compiler's messages show.
fn missing_package(messages: &str) -> Option<&'static str> {
    let says = |needles: &[&str]| needles.iter().any(|needle| messages.contains(needle));
    // clang's "fatal error: 'HEADER' file not found": C's headers come with wasi-libc, C++'s
    // (no `.h`) with libc++.
    let missing_header = messages.split("fatal error: '").nth(1).and_then(|rest| {
        let (header, after) = rest.split_once('\'')?;
        after.starts_with(" file not found").then_some(header)
    });
    if says(&["wasm-ld", "unable to execute command"]) {
        Some("lld")
    } else if says(&["libclang_rt.builtins-wasm32"]) {
        Some("libclang-rt-dev-wasm32")
    } else if says(&["-lc++"]) || missing_header.is_some_and(|header| !header.ends_with(".h")) {
        Some("libc++-dev-wasm32")
    } else if missing_header.is_some() || says(&["cannot find -lc", "crt1-reactor.o"]) {
        Some("wasi-libc")
    } else {
        None
    }
}

/// The core module as a component: its WASI preview-1 imports met by wasmtime's reactor
/// adapter, its types from the bindings' custom section.
fn componentize(module: &[u8]) -> anyhow::Result<Vec<u8>> {
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(module)
        .and_then(|encoder| {
            encoder.adapter(
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )
        })
        .and_then(|encoder| encoder.encode())
        .map_err(|error| anyhow::anyhow!("cannot make a component of the module: {error:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_become_c_strings() {
        assert_eq!(c_string("{\"a\": \"b\\\\c\"}"), r#""{\"a\": \"b\\\\c\"}""#);
        assert_eq!(c_string("a\nb"), "\"a\\n\"\n    \"b\"");
        assert_eq!(c_string("??="), r#""\?\?=""#);
    }

    #[test]
    fn missing_packages_are_named() {
        assert_eq!(
            missing_package(
                "clang: error: unable to execute command: Executable \"wasm-ld\" doesn't exist!"
            ),
            Some("lld")
        );
        assert_eq!(
            missing_package("src/plugin.c:8:10: fatal error: 'math.h' file not found"),
            Some("wasi-libc")
        );
        assert_eq!(
            missing_package("src/plugin.cpp:9:10: fatal error: 'algorithm' file not found"),
            Some("libc++-dev-wasm32")
        );
        assert_eq!(
            missing_package("error: use of undeclared identifier 'x'"),
            None
        );
    }
}
