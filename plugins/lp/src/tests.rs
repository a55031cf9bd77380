//! The model's checks and the MPS reader, natively (solving is the component's, tested through
//! the server in `tests/lp.rs`).

use serde_json::json;

use crate::input::{LpInput, Sense};
use crate::model::{self, Model};
use crate::mps;

fn input(value: serde_json::Value) -> LpInput {
    serde_json::from_value(value).expect("the test input parses")
}

fn messages(violations: &[caseload_sdk::Violation]) -> String {
    violations
        .iter()
        .map(|violation| format!("{} {}", violation.pointer, violation.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn built(text: &str) -> Model {
    let input = mps::parse(text.as_bytes()).unwrap_or_else(|violations| {
        panic!("{}", messages(&violations));
    });
    model::build(&input).unwrap_or_else(|violations| panic!("{}", messages(&violations)))
}

#[test]
fn a_model_is_laid_out_by_columns_with_its_bounds() {
    let model = model::build(&input(json!({
        "sense": "maximize",
        "variables": [
            {"name": "x", "cost": 3, "upper": 4},
            {"name": "y", "cost": 2, "lower": null, "integer": true}
        ],
        "constraints": [
            {"name": "both", "terms": {"x": 1, "y": 1}, "upper": 6},
            {"terms": {"y": 2, "x": 0}, "lower": -1, "upper": 5}
        ]
    })))
    .expect("as the test says");
    assert_eq!(model.sense, Sense::Maximize);
    assert_eq!(model.column_lower, [0.0, f64::NEG_INFINITY]);
    assert_eq!(model.column_upper, [4.0, f64::INFINITY]);
    assert_eq!(model.row_names, ["both", "r2"]);
    assert_eq!(model.row_lower, [f64::NEG_INFINITY, -1.0]);
    assert_eq!(model.row_upper, [6.0, 5.0]);
    // x: row 0; y: rows 0 and 1 (the explicit zero is left out).
    assert_eq!(model.start, [0, 1, 3]);
    assert_eq!(model.index, [0, 0, 1]);
    assert_eq!(model.value, [1.0, 1.0, 2.0]);
    assert!(model.is_mip());
}

#[test]
fn a_bad_model_is_refused_at_each_pointer() {
    let violations = model::build(&input(json!({
        "variables": [
            {"name": "x", "lower": 2, "upper": 1},
            {"name": "x"},
            {"name": "a/b"}
        ],
        "constraints": [
            {"name": "c", "terms": {"x": "two", "z": 1, "a/b": 1}},
            {"name": "c", "terms": {}, "lower": 3, "upper": 2}
        ],
        "mip_gap": 2,
        "initial_values": {"x": 1, "w": 0}
    })))
    .expect_err("refused");
    let text = messages(&violations);
    for expected in [
        "/variables/0/upper the upper bound 1 is below the lower bound 2",
        "/variables/1/name \"x\" is already the name of /variables/0",
        "/mip_gap 2 is not a relative gap",
        "/constraints/0/terms/x the coefficient \"two\" is not a finite number",
        "/constraints/0/terms/z no variable is named \"z\"",
        "/constraints/1/name \"c\" is already the name of /constraints/0",
        "/constraints/1/upper the upper bound 2 is below the lower bound 3",
        "/initial_values/w no variable is named \"w\"",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    // The pointer escapes '/' in a variable's name, and that term is fine.
    assert!(!text.contains("a~1b"), "{text}");
}

#[test]
fn afiro_reads_as_netlib_gives_it() {
    let text = include_str!("../tests/data/afiro.mps");
    let input = mps::parse(text.as_bytes()).expect("as the test says");
    assert_eq!(input.name.as_deref(), Some("AFIRO"));
    assert_eq!(input.variables.len(), 32);
    // 27 rows besides the objective.
    assert_eq!(input.constraints.len(), 27);
    let model = model::build(&input).expect("as the test says");
    assert_eq!(model.nonzeros(), 83);
    let x39 = model
        .column_names
        .iter()
        .position(|name| name == "X39")
        .expect("as the test says");
    assert_eq!(model.cost[x39], 10.0);
    let r23 = model
        .row_names
        .iter()
        .position(|name| name == "R23")
        .expect("as the test says");
    assert_eq!((model.row_lower[r23], model.row_upper[r23]), (44.0, 44.0));
    let x05 = model
        .row_names
        .iter()
        .position(|name| name == "X05")
        .expect("as the test says");
    assert_eq!(
        (model.row_lower[x05], model.row_upper[x05]),
        (f64::NEG_INFINITY, 80.0)
    );
    // It survives its own JSON: what a decoded dataset becomes.
    let again: LpInput =
        serde_json::from_str(&serde_json::to_string(&input).expect("as the test says"))
            .expect("as the test says");
    assert_eq!(model::build(&again).expect("as the test says"), model);
}

const MIP: &str = "\
NAME small mip
OBJSENSE
    MAX
ROWS
 N  obj
 L  cap
 G  least
 E  ranged
 N  spare
COLUMNS
    MARKER                 'MARKER'                 'INTORG'
    a  obj  5  cap  2
    b  obj  4  cap  3
    c  obj  3  cap  1
    c  ranged  1
    MARKER                 'MARKER'                 'INTEND'
    d  obj  1.5D0  least  1
    d  spare  7
RHS
    rhs  cap  5  least  -2
    rhs  obj  -10
    ranged  2
RANGES
    rng  ranged  -1.5  least  4
BOUNDS
 UP bnd  b  3
 MI bnd  d
 UP bnd  d  -1
 BV bnd  c
ENDATA
";

#[test]
fn mps_markers_bounds_ranges_and_sense_follow_the_conventions() {
    let model = built(MIP);
    assert_eq!(model.sense, Sense::Maximize);
    assert_eq!(model.column_names, ["a", "b", "c", "d"]);
    assert_eq!(model.integer, [true, true, true, false]);
    // a: integer without a bound, so binary; b: integer with an upper bound; c: BV.
    assert_eq!(model.column_lower, [0.0, 0.0, 0.0, f64::NEG_INFINITY]);
    assert_eq!(model.column_upper, [1.0, 3.0, 1.0, -1.0]);
    assert_eq!(model.cost, [5.0, 4.0, 3.0, 1.5]);
    // The objective's RHS is minus its constant; the free row is dropped.
    assert_eq!(model.offset, 10.0);
    assert_eq!(model.row_names, ["cap", "least", "ranged"]);
    // E with a negative range: [rhs + range, rhs]; G: [rhs, rhs + |range|].
    assert_eq!(model.row_lower, [f64::NEG_INFINITY, -2.0, 0.5]);
    assert_eq!(model.row_upper, [5.0, 2.0, 2.0]);
}

#[test]
fn fixed_mps_names_may_hold_spaces() {
    let text = "\
NAME          FIXED
ROWS
 N  COST
 L  LIM 1
COLUMNS
    X ONE     COST      1.0            LIM 1     1.0
RHS
    RHS       LIM 1     4.0
BOUNDS
 UP BND       X ONE     3.0
ENDATA
";
    let model = built(text);
    assert_eq!(model.column_names, ["X ONE"]);
    assert_eq!(model.row_names, ["LIM 1"]);
    assert_eq!(model.row_upper, [4.0]);
    assert_eq!(model.column_upper, [3.0]);
}

#[test]
fn a_bad_mps_file_is_refused_by_line() {
    let cases = [
        (
            "NAME x\nROWS\n N obj\nCOLUMNZ\nENDATA\n",
            "line 4: unknown section COLUMNZ",
        ),
        (
            "NAME x\nROWS\n N obj\n L c\nCOLUMNS\n    x obj 1 c abc\nENDATA\n",
            "line 6: \"abc\" is not a number",
        ),
        (
            "NAME x\nROWS\n N obj\n L c\nCOLUMNS\n    x obj 1 c Inf\nENDATA\n",
            "line 6: \"Inf\" is not a finite number",
        ),
        (
            "NAME x\nROWS\n N obj\nCOLUMNS\n    x obj 1\nBOUNDS\n UP b y 1\nENDATA\n",
            "line 7: column \"y\" is not in COLUMNS",
        ),
        (
            "NAME x\nROWS\n N obj\nCOLUMNS\n    x nope 1\nENDATA\n",
            "line 5: row \"nope\" is not in ROWS",
        ),
        (
            "NAME x\nROWS\n N obj\n X c\nENDATA\n",
            "line 4: row type \"X\" is not N, E, L or G",
        ),
        (
            "NAME x\nROWS\n N obj\nCOLUMNS\n    x obj 1\nBOUNDS\n SC b x 1\nENDATA\n",
            "line 7: bound type \"SC\" is not one of",
        ),
        (
            "NAME x\nROWS\n N obj\nCOLUMNS\n    x obj 1\n",
            "the file ends without ENDATA",
        ),
        ("NAME x\nROWS\n L c\nENDATA\n", "ROWS has no N row"),
    ];
    for (text, expected) in cases {
        let violations = mps::parse(text.as_bytes()).expect_err("refused");
        let found = messages(&violations);
        assert!(found.contains(expected), "{expected:?} not in {found:?}");
    }
}

#[test]
fn a_bound_of_1e20_or_inf_is_none() {
    let model = built(
        "NAME x\nROWS\n N obj\nCOLUMNS\n    x obj 1\n    y obj 1\nBOUNDS\n UP b x 1e30\n LO b y -Inf\nENDATA\n",
    );
    assert_eq!(model.column_upper, [f64::INFINITY, f64::INFINITY]);
    assert_eq!(model.column_lower, [0.0, f64::NEG_INFINITY]);
}

const LP_FILE: &str = "\
\\ The MIP of the MPS test above, as an LP file.
Maximize
 obj: 5 a + 4 b + 3 c + 1.5 d
   + 10
Subject To
 cap: 2 a + 3 b + c <= 5
 least: d >= -2
 ranged: 0.5 <= c
   <= 2
 c1: 3 x - x + 2 <= 8
Bounds
 b <= 3
 -inf <= d <= -1
 x free
General
 a b
Binary
 c
End
";

#[test]
fn lp_files_read_as_cplex_writes_them() {
    let input = crate::lp_format::parse(LP_FILE.as_bytes())
        .unwrap_or_else(|violations| panic!("{}", messages(&violations)));
    let model =
        model::build(&input).unwrap_or_else(|violations| panic!("{}", messages(&violations)));
    assert_eq!(model.sense, Sense::Maximize);
    assert_eq!(model.column_names, ["a", "b", "c", "d", "x"]);
    assert_eq!(model.cost, [5.0, 4.0, 3.0, 1.5, 0.0]);
    assert_eq!(model.offset, 10.0);
    assert_eq!(model.integer, [true, true, true, false, false]);
    assert_eq!(
        model.column_lower,
        [0.0, 0.0, 0.0, f64::NEG_INFINITY, f64::NEG_INFINITY]
    );
    assert_eq!(
        model.column_upper,
        [f64::INFINITY, 3.0, 1.0, -1.0, f64::INFINITY]
    );
    // A range over two lines; a constant on the left moves right, and x's two terms are
    // summed.
    assert_eq!(model.row_names, ["cap", "least", "ranged", "c1"]);
    assert_eq!(
        model.row_lower,
        [f64::NEG_INFINITY, -2.0, 0.5, f64::NEG_INFINITY]
    );
    assert_eq!(model.row_upper, [5.0, f64::INFINITY, 2.0, 6.0]);
    let x = 4;
    let at = model.start[x] as usize;
    assert_eq!((model.index[at], model.value[at]), (3, 2.0));
}

#[test]
fn a_bad_lp_file_is_refused_by_line() {
    let cases = [
        (
            "Maximize\n obj: x\nSubject To\n c: x + <= 2\nEnd\n",
            "line 4: an expression ends with a sign",
        ),
        (
            "Maximize\n obj: x\nSubject To\n c: x <= y\nEnd\n",
            "line 4: a constraint's right-hand side must be a number",
        ),
        (
            "Maximize\n obj: x + [ x ^ 2 ]\nEnd\n",
            "line 2: quadratic terms are not supported",
        ),
        (
            "Maximize\n obj: 1e999 x\nEnd\n",
            "line 2: \"1e999\" is not a finite number",
        ),
        (
            "Maximize\n obj: x\nBounds\n x between 1 and 2\nEnd\n",
            "line 4: expected a bound",
        ),
        (
            "Maximize\n obj: x\nSOS\nEnd\n",
            "line 3: \"sos\": semi-continuous variables and SOS",
        ),
        (
            "obj: x\n",
            "line 1: \"obj: x\" comes before Maximize or Minimize",
        ),
        (
            "Minimize\n obj: x\nSubject To\n c: x >= 1\n",
            "the file ends without End",
        ),
    ];
    for (text, expected) in cases {
        let violations = crate::lp_format::parse(text.as_bytes()).expect_err("refused");
        let found = messages(&violations);
        assert!(found.contains(expected), "{expected:?} not in {found:?}");
    }
}

#[test]
fn text_files_are_told_apart_by_content() {
    use caseload_sdk::UseCase;

    let afiro = crate::Lp::decode("text/plain", include_bytes!("../tests/data/afiro.mps"))
        .expect("read as MPS");
    assert_eq!(afiro.variables.len(), 32);
    let lp = crate::Lp::decode("text/plain", LP_FILE.as_bytes()).expect("read as LP");
    assert_eq!(lp.sense, Sense::Maximize);
    assert!(crate::Lp::decode("application/pdf", b"%PDF").is_err());
}
