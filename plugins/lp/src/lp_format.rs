//! CPLEX LP files (`text/x-lp`): an objective section (`Maximize` or `Minimize`, an optional
//! `name:` and a linear expression), `Subject To` with named or unnamed constraints
//! (`c1: 3 x + 2 y <= 12`; a constant on the left moves to the right; `2 <= x + y <= 5` is a
//! range), `Bounds` (`x >= 1`, `x <= 4`, `x = 2`, `-inf <= x <= 3`, `x free`), `General` and
//! `Binary` lists, and `End`, read into the JSON input.
//!
//! Section keywords stand on lines of their own, as writers put them (HiGHS, CPLEX, Gurobi,
//! PuLP); statements may span lines; `\` starts a comment. Variables are numbered as they
//! first appear; a variable's bounds are 0 and none until `Bounds` says otherwise; a binary
//! one's are 0 and 1. Quadratic terms, semi-continuous variables and SOS sections are refused
//! by line, as is anything else the file gets wrong.

use std::collections::HashMap;

use caseload_sdk::Violation;
use caseload_sdk::text::LineProblems;
use serde_json::{Map, Value};

use crate::input::{Constraint, LpInput, Sense, Variable};

pub const MEDIA_TYPE: &str = "text/x-lp";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Objective,
    Constraints,
    Bounds,
    General,
    Binary,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Plus,
    Minus,
    Colon,
    /// `<=` as -1, `=` as 0, `>=` as 1.
    Compare(i8),
}

/// The input an LP file describes, or what is wrong with it, by line.
pub fn parse(data: &[u8]) -> Result<LpInput, Vec<Violation>> {
    let text = std::str::from_utf8(data).map_err(|error| {
        vec![Violation::new(
            "",
            format!("the file is not UTF-8: {error}"),
        )]
    })?;
    let mut reader = Reader::default();
    let mut section = Section::None;
    // A statement's tokens, each with its line, until it is complete.
    let mut pending: Vec<(Token, usize)> = Vec::new();
    let mut ended = false;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        let line = line.split('\\').next().unwrap_or_default();
        let words: Vec<String> = line
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        let keyword = words.join(" ");
        let next = match keyword.as_str() {
            "maximize" | "maximise" | "maximum" | "max" => {
                reader.input.sense = Sense::Maximize;
                Some(Section::Objective)
            }
            "minimize" | "minimise" | "minimum" | "min" => {
                reader.input.sense = Sense::Minimize;
                Some(Section::Objective)
            }
            "subject to" | "such that" | "st" | "s.t." | "st." => Some(Section::Constraints),
            "bounds" | "bound" => Some(Section::Bounds),
            "general" | "generals" | "gen" | "integer" | "integers" => Some(Section::General),
            "binary" | "binaries" | "bin" => Some(Section::Binary),
            "semi-continuous" | "semi-continuous variables" | "semis" | "semi" | "sos" => {
                reader.problem(
                    number,
                    format!("{keyword:?}: semi-continuous variables and SOS are not supported"),
                );
                Some(Section::None)
            }
            "end" => {
                ended = true;
                None
            }
            _ => None,
        };
        if let Some(next) = next {
            reader.finish_statement(section, &mut pending);
            section = next;
            continue;
        }
        if ended {
            break;
        }
        if words.is_empty() {
            continue;
        }
        match section {
            Section::None => reader.problem(
                number,
                format!("{line:?} comes before Maximize or Minimize, where an LP file starts"),
            ),
            Section::Objective => {
                if let Some(tokens) = reader.tokens(number, line) {
                    pending.extend(tokens.into_iter().map(|token| (token, number)));
                }
            }
            Section::Constraints => {
                if let Some(tokens) = reader.tokens(number, line) {
                    pending.extend(tokens.into_iter().map(|token| (token, number)));
                }
                reader.constraints(&mut pending);
            }
            Section::Bounds => reader.bound(number, line),
            Section::General | Section::Binary => {
                for name in line.split_whitespace() {
                    let j = reader.variable(name);
                    let variable = &mut reader.input.variables[j];
                    variable.integer = true;
                    if section == Section::Binary {
                        variable.lower = Some(0.0);
                        variable.upper = Some(1.0);
                    }
                }
            }
        }
    }
    reader.finish_statement(section, &mut pending);
    if !ended && reader.problems.count() == 0 {
        reader.problems.push("the file ends without End".into());
    }
    reader.problems.into_result(reader.input)
}

#[derive(Default)]
struct Reader {
    input: LpInput,
    positions: HashMap<String, usize>,
    problems: LineProblems,
}

impl Reader {
    fn problem(&mut self, line: usize, message: String) {
        self.problems.push(format!("line {line}: {message}"));
    }

    /// The variable's index, added (bounds 0 and none) if it is new.
    fn variable(&mut self, name: &str) -> usize {
        if let Some(&j) = self.positions.get(name) {
            return j;
        }
        let j = self.input.variables.len();
        self.input.variables.push(Variable {
            name: name.to_owned(),
            cost: 0.0,
            lower: Some(0.0),
            upper: None,
            integer: false,
        });
        self.positions.insert(name.to_owned(), j);
        j
    }

    fn tokens(&mut self, line: usize, text: &str) -> Option<Vec<Token>> {
        let mut tokens = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let (token, width) = match c {
                '+' => (Token::Plus, 1),
                '-' => (Token::Minus, 1),
                ':' => (Token::Colon, 1),
                '<' | '>' | '=' => match two.as_str() {
                    "<=" | "=<" => (Token::Compare(-1), 2),
                    ">=" | "=>" => (Token::Compare(1), 2),
                    _ if c == '<' => (Token::Compare(-1), 1),
                    _ if c == '>' => (Token::Compare(1), 1),
                    _ => (Token::Compare(0), 1),
                },
                '[' | ']' | '^' | '*' => {
                    self.problem(line, "quadratic terms are not supported".into());
                    return None;
                }
                c if c.is_ascii_digit() || c == '.' => {
                    let mut end = i;
                    while end < chars.len()
                        && (chars[end].is_ascii_digit()
                            || chars[end] == '.'
                            || ((chars[end] == 'e' || chars[end] == 'E')
                                && chars.get(end + 1).is_some_and(|next| {
                                    next.is_ascii_digit() || *next == '+' || *next == '-'
                                }))
                            || ((chars[end] == '+' || chars[end] == '-')
                                && end > i
                                && (chars[end - 1] == 'e' || chars[end - 1] == 'E')))
                    {
                        end += 1;
                    }
                    let text: String = chars[i..end].iter().collect();
                    match text.parse::<f64>() {
                        Ok(value) if value.is_finite() => (Token::Number(value), end - i),
                        _ => {
                            self.problem(line, format!("{text:?} is not a finite number"));
                            return None;
                        }
                    }
                }
                _ => {
                    let mut end = i;
                    while end < chars.len() && name_char(chars[end]) {
                        end += 1;
                    }
                    if end == i {
                        self.problem(line, format!("unexpected {c:?}"));
                        return None;
                    }
                    let name: String = chars[i..end].iter().collect();
                    let lower = name.to_ascii_lowercase();
                    let token = if lower == "inf" || lower == "infinity" {
                        Token::Number(f64::INFINITY)
                    } else {
                        Token::Name(name)
                    };
                    (token, end - i)
                }
            };
            tokens.push(token);
            i += width;
        }
        Some(tokens)
    }

    /// Takes every complete constraint off the front of `pending`: an optional `name :`,
    /// an expression, a comparison and a number (or a number, a comparison, an expression, a
    /// comparison and a number: a range).
    fn constraints(&mut self, pending: &mut Vec<(Token, usize)>) {
        loop {
            let start = if matches!(pending.get(1), Some((Token::Colon, _))) {
                2
            } else {
                0
            };
            let mut first = start;
            while let Some((Token::Plus | Token::Minus, _)) = pending.get(first) {
                first += 1;
            }
            // A range: a number right before a comparison, at the start.
            let is_range = matches!(pending.get(first), Some((Token::Number(_), _)))
                && matches!(pending.get(first + 1), Some((Token::Compare(_), _)));
            let comparisons: Vec<usize> = pending
                .iter()
                .enumerate()
                .filter(|(_, (token, _))| matches!(token, Token::Compare(_)))
                .map(|(at, _)| at)
                .collect();
            let needed = if is_range { 2 } else { 1 };
            let Some(&last) = comparisons.get(needed - 1) else {
                return;
            };
            // The right-hand side: a signed number after the last comparison.
            let mut end = last + 1;
            let mut sign = 1.0;
            while let Some((Token::Plus | Token::Minus, _)) = pending.get(end) {
                if pending[end].0 == Token::Minus {
                    sign = -sign;
                }
                end += 1;
            }
            match pending.get(end) {
                Some((Token::Number(_), _)) => {}
                None => return,
                Some((_, line)) => {
                    let line = *line;
                    self.problem(
                        line,
                        "a constraint's right-hand side must be a number".into(),
                    );
                    pending.clear();
                    return;
                }
            }
            let statement: Vec<(Token, usize)> = pending.drain(..=end).collect();
            self.constraint(&statement, is_range.then_some(first + 1), last, sign);
        }
    }

    fn constraint(
        &mut self,
        statement: &[(Token, usize)],
        range_at: Option<usize>,
        last: usize,
        sign: f64,
    ) {
        let line = statement[0].1;
        let (name, start) = match statement {
            [(Token::Name(name), _), (Token::Colon, _), ..] => (Some(name.clone()), 2),
            _ => (None, 0),
        };
        let Some((Token::Number(rhs), _)) = statement.last() else {
            return;
        };
        let rhs = sign * rhs;
        let Token::Compare(relation) = statement[last].0 else {
            return;
        };
        let (from, lower_bound) = match range_at {
            Some(at) => {
                let Some(lower) = self.constant(&statement[start..at], line) else {
                    return;
                };
                if statement[at].0 != Token::Compare(-1) || relation != -1 {
                    self.problem(
                        line,
                        "a range is written lower <= expression <= upper".into(),
                    );
                    return;
                }
                (at + 1, Some(lower))
            }
            None => (start, None),
        };
        let Some((terms, constant)) = self.expression(&statement[from..last], line) else {
            return;
        };
        let rhs = rhs - constant;
        let (lower, upper) = match (lower_bound, relation) {
            (Some(lower), _) => (Some(lower - constant), Some(rhs)),
            (None, -1) => (None, Some(rhs)),
            (None, 1) => (Some(rhs), None),
            (None, _) => (Some(rhs), Some(rhs)),
        };
        let index = self.input.constraints.len();
        self.input.constraints.push(Constraint {
            name: Some(name.unwrap_or_else(|| format!("r{}", index + 1))),
            terms,
            lower,
            upper,
        });
    }

    /// A signed number alone.
    fn constant(&mut self, tokens: &[(Token, usize)], line: usize) -> Option<f64> {
        let mut sign = 1.0;
        for (token, _) in tokens {
            match token {
                Token::Minus => sign = -sign,
                Token::Plus => {}
                Token::Number(value) => return Some(sign * value),
                _ => break,
            }
        }
        self.problem(line, "expected a number".into());
        None
    }

    /// A linear expression: its terms by variable (repeated ones summed) and its constant.
    fn expression(
        &mut self,
        tokens: &[(Token, usize)],
        line: usize,
    ) -> Option<(Map<String, Value>, f64)> {
        let mut coefficients: Vec<(usize, f64)> = Vec::new();
        let mut constant = 0.0;
        let mut sign = 1.0;
        let mut coefficient: Option<f64> = None;
        // After a term, only a sign may come.
        let mut after_term = false;
        for (token, token_line) in tokens {
            match token {
                Token::Plus | Token::Minus => {
                    // A number before a sign was a constant.
                    if let Some(value) = coefficient.take() {
                        constant += sign * value;
                        sign = 1.0;
                    } else if after_term {
                        sign = 1.0;
                    }
                    if *token == Token::Minus {
                        sign = -sign;
                    }
                    after_term = false;
                }
                Token::Number(value) if coefficient.is_none() && !after_term => {
                    coefficient = Some(*value);
                }
                Token::Name(name) if !after_term => {
                    let j = self.variable(name);
                    coefficients.push((j, sign * coefficient.take().unwrap_or(1.0)));
                    sign = 1.0;
                    after_term = true;
                }
                other => {
                    self.problem(
                        *token_line,
                        format!("unexpected {} in an expression", shown(other)),
                    );
                    return None;
                }
            }
        }
        if let Some(value) = coefficient {
            constant += sign * value;
        } else if matches!(tokens.last(), Some((Token::Plus | Token::Minus, _))) {
            self.problem(line, "an expression ends with a sign".into());
            return None;
        }
        let mut terms = Map::new();
        for (j, value) in coefficients {
            let name = self.input.variables[j].name.clone();
            let sum = terms.get(&name).and_then(Value::as_f64).unwrap_or(0.0) + value;
            terms.insert(name, Value::from(sum));
        }
        Some((terms, constant))
    }

    fn finish_statement(&mut self, section: Section, pending: &mut Vec<(Token, usize)>) {
        if pending.is_empty() {
            return;
        }
        let line = pending[0].1;
        match section {
            Section::Objective => {
                let start = match pending.as_slice() {
                    [(Token::Name(_), _), (Token::Colon, _), ..] => 2,
                    _ => 0,
                };
                let tokens = std::mem::take(pending);
                if let Some((terms, constant)) = self.expression(&tokens[start..], line) {
                    for (name, value) in terms {
                        let j = self.positions[&name];
                        self.input.variables[j].cost = value.as_f64().unwrap_or_default();
                    }
                    self.input.objective_offset = constant;
                }
            }
            _ => {
                self.problem(
                    line,
                    "a constraint without a comparison and a right-hand side".into(),
                );
                pending.clear();
            }
        }
    }

    /// One bound statement per line.
    fn bound(&mut self, line: usize, text: &str) {
        let Some(tokens) = self.tokens(line, text) else {
            return;
        };
        // Signs folded into the numbers after them.
        let mut folded: Vec<Token> = Vec::new();
        let mut sign = 1.0;
        for token in tokens {
            match token {
                Token::Minus => sign = -sign,
                Token::Plus => {}
                Token::Number(value) => {
                    folded.push(Token::Number(sign * value));
                    sign = 1.0;
                }
                other => folded.push(other),
            }
        }
        let set = |reader: &mut Reader, name: &str, relation: i8, value: f64| {
            let j = reader.variable(name);
            let variable = &mut reader.input.variables[j];
            let finite = value.is_finite().then_some(value);
            match relation {
                -1 => variable.upper = finite,
                1 => variable.lower = finite,
                _ => {
                    variable.lower = finite;
                    variable.upper = finite;
                }
            }
        };
        match folded.as_slice() {
            [Token::Name(name), Token::Name(free)] if free.eq_ignore_ascii_case("free") => {
                let j = self.variable(name);
                self.input.variables[j].lower = None;
                self.input.variables[j].upper = None;
            }
            [
                Token::Name(name),
                Token::Compare(relation),
                Token::Number(value),
            ] => set(self, name, *relation, *value),
            [
                Token::Number(value),
                Token::Compare(relation),
                Token::Name(name),
            ] => set(self, name, -relation, *value),
            [
                Token::Number(low),
                Token::Compare(-1),
                Token::Name(name),
                Token::Compare(-1),
                Token::Number(high),
            ] => {
                set(self, name, 1, *low);
                set(self, name, -1, *high);
            }
            _ => self.problem(
                line,
                format!(
                    "expected a bound such as \"x >= 1\", \"-inf <= x <= 4\" or \"x free\", \
                     found {:?}",
                    text.trim()
                ),
            ),
        }
    }
}

/// The characters of a name after its first (CPLEX's list).
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!\"#$%&()/,.;?@_`'{}|~".contains(c)
}

fn shown(token: &Token) -> String {
    match token {
        Token::Number(value) => format!("number {value}"),
        Token::Name(name) => format!("name {name:?}"),
        Token::Plus => "'+'".into(),
        Token::Minus => "'-'".into(),
        Token::Colon => "':'".into(),
        Token::Compare(_) => "a comparison".into(),
    }
}
