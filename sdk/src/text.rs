//! Reading text dataset files line by line, with every malformed line reported by its
//! number: what a use case's `decode` needs for formats such as G-set or qbsolv files.

use std::str::FromStr;

use crate::Violation;

/// At most this many problems are listed for one file; the rest are counted.
pub const MAX_LISTED_PROBLEMS: usize = 100;

/// The file's lines with their 1-based numbers, trimmed, blank ones skipped; `\r\n` line
/// ends are accepted.
pub fn numbered_lines(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    data.split(|&byte| byte == b'\n')
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim_ascii()))
        .filter(|(_, line)| !line.is_empty())
}

/// Exactly `N` whitespace-separated fields, or nothing.
pub fn fields<const N: usize>(line: &[u8]) -> Option<[&[u8]; N]> {
    let mut parts = line
        .split(|byte| byte.is_ascii_whitespace())
        .filter(|part| !part.is_empty());
    let mut fields = [&[][..]; N];
    for field in &mut fields {
        *field = parts.next()?;
    }
    parts.next().is_none().then_some(fields)
}

/// A field read as a number of type `T`, or nothing.
pub fn number<T: FromStr>(field: &[u8]) -> Option<T> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// A line or field as it can be quoted in a message: valid UTF-8, at most 60 characters.
pub fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

/// The problems found in a file so far: the first [`MAX_LISTED_PROBLEMS`] in full, the rest
/// counted.
#[derive(Debug, Default)]
pub struct LineProblems {
    listed: Vec<Violation>,
    count: usize,
}

impl LineProblems {
    /// Records a problem, its message starting with where it is (`line 7: ...`).
    pub fn push(&mut self, message: String) {
        self.count += 1;
        if self.listed.len() < MAX_LISTED_PROBLEMS {
            self.listed.push(Violation::new("", message));
        }
    }

    /// How many problems were found.
    pub fn count(&self) -> usize {
        self.count
    }

    /// `value` if no problem was found, else the problems, the unlisted ones counted.
    pub fn into_result<T>(mut self, value: T) -> Result<T, Vec<Violation>> {
        if self.count == 0 {
            return Ok(value);
        }
        if self.count > self.listed.len() {
            let more = self.count - self.listed.len();
            self.listed.push(Violation::new(
                "",
                format!("{more} more violations not listed"),
            ));
        }
        Err(self.listed)
    }
}
