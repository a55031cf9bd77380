//! VRPLIB files (`text/x-vrplib`, `.vrp`), as CVRPLIB publishes CVRP and VRPTW instances:
//! `KEY : value` header lines (NAME, COMMENT, TYPE, DIMENSION, CAPACITY, VEHICLES, DISTANCE,
//! SERVICE_TIME, EDGE_WEIGHT_TYPE `EUC_2D` or `EXPLICIT`, EDGE_WEIGHT_FORMAT), then sections
//! (NODE_COORD, DEMAND, DEPOT, EDGE_WEIGHT in FULL_MATRIX, LOWER_ROW, UPPER_ROW,
//! LOWER_DIAG_ROW or UPPER_DIAG_ROW form, TIME_WINDOW, SERVICE_TIME) and an optional EOF.
//! Node numbers become the clients' ids; the depot's row and column come first. Every
//! malformed line is reported by its number.

use caseload_sdk::Violation;
use caseload_sdk::text::{LineProblems, number, numbered_lines, shown};

use crate::input::{Client, ClientId, Depot, Rounding, Vehicles, VrpInput};

/// The media type of VRPLIB files.
pub const MEDIA_TYPE: &str = "text/x-vrplib";

/// Header keys read but not needed.
const IGNORED_KEYS: &[&str] = &["COMMENT", "NODE_COORD_TYPE", "DISPLAY_DATA_TYPE"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Header,
    Coordinates,
    Demands,
    Depots,
    Weights,
    TimeWindows,
    ServiceTimes,
    Display,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Full,
    LowerRow,
    UpperRow,
    LowerDiagonalRow,
    UpperDiagonalRow,
}

/// What the file says, as read.
#[derive(Default)]
struct Read {
    name: Option<String>,
    dimension: Option<(usize, usize)>,
    capacity: Option<f64>,
    vehicles: Option<u64>,
    distance_limit: Option<f64>,
    uniform_service: Option<f64>,
    explicit: Option<usize>,
    format: Option<(Format, usize)>,
    coordinates: Vec<Option<(f64, f64)>>,
    demands: Vec<Option<f64>>,
    windows: Vec<Option<[f64; 2]>>,
    services: Vec<Option<f64>>,
    depots: Vec<(usize, usize)>,
    weights: Vec<f64>,
    weights_line: usize,
    /// The most nodes the file can describe: one byte each at least.
    max_nodes: usize,
}

/// Reads a VRPLIB file into the input it describes.
pub fn parse(data: &[u8]) -> Result<VrpInput, Vec<Violation>> {
    let mut problems = LineProblems::default();
    let mut read = Read {
        max_nodes: data.len(),
        ..Read::default()
    };
    let mut section = Section::Header;
    for (line_number, line) in numbered_lines(data) {
        let text = String::from_utf8_lossy(line);
        let first = text.split_whitespace().next().unwrap_or("");
        let keyword = first.trim_end_matches(':');
        // A section starts with its name alone on a line.
        let next_section = match keyword {
            "NODE_COORD_SECTION" => Some(Section::Coordinates),
            "DEMAND_SECTION" => Some(Section::Demands),
            "DEPOT_SECTION" => Some(Section::Depots),
            "EDGE_WEIGHT_SECTION" => Some(Section::Weights),
            "TIME_WINDOW_SECTION" => Some(Section::TimeWindows),
            "SERVICE_TIME_SECTION" => Some(Section::ServiceTimes),
            "DISPLAY_DATA_SECTION" => Some(Section::Display),
            "EOF" => Some(Section::End),
            _ => None,
        };
        if let Some(next) = next_section {
            section = next;
            if section == Section::Weights {
                read.weights_line = line_number;
            }
            if matches!(
                section,
                Section::Coordinates
                    | Section::Demands
                    | Section::TimeWindows
                    | Section::ServiceTimes
            ) && read.dimension.is_none()
            {
                problems.push(format!(
                    "line {line_number}: {keyword} comes before DIMENSION, which says how many nodes it lists"
                ));
                section = Section::Display;
            }
            continue;
        }
        if keyword.ends_with("_SECTION") {
            problems.push(format!("line {line_number}: unknown section {keyword}"));
            section = Section::Display;
            continue;
        }
        if let Some((key, value)) = header_field(&text) {
            if section != Section::Header && !looks_numeric(&text) {
                section = Section::Header;
            }
            if section == Section::Header {
                header(&mut read, &mut problems, line_number, key, value);
                continue;
            }
        }
        match section {
            Section::Header => problems.push(format!(
                "line {line_number}: expected 'KEY : value' or a section name, found {:?}",
                shown(line)
            )),
            Section::Coordinates => node_line::<2>(&read, &mut problems, line_number, line)
                .into_iter()
                .for_each(|(node, [x, y])| read.coordinates[node] = Some((x, y))),
            Section::Demands => node_line::<1>(&read, &mut problems, line_number, line)
                .into_iter()
                .for_each(|(node, [demand])| read.demands[node] = Some(demand)),
            Section::TimeWindows => node_line::<2>(&read, &mut problems, line_number, line)
                .into_iter()
                .for_each(|(node, window)| read.windows[node] = Some(window)),
            Section::ServiceTimes => node_line::<1>(&read, &mut problems, line_number, line)
                .into_iter()
                .for_each(|(node, [service])| read.services[node] = Some(service)),
            Section::Depots => {
                for field in text.split_whitespace() {
                    match field.parse::<i64>() {
                        Ok(-1) => {}
                        Ok(node) if read.dimension.is_some_and(|(n, _)| node >= 1 && node as usize <= n) => {
                            read.depots.push((node as usize - 1, line_number));
                        }
                        _ => problems.push(format!(
                            "line {line_number}: {field:?} is not a node number (1 to DIMENSION) or -1"
                        )),
                    }
                }
            }
            Section::Weights => {
                for field in text.split_whitespace() {
                    match field.parse::<f64>() {
                        Ok(weight) if weight.is_finite() => read.weights.push(weight),
                        _ => {
                            problems.push(format!("line {line_number}: {field:?} is not a number"))
                        }
                    }
                }
            }
            Section::Display => {}
            Section::End => problems.push(format!(
                "line {line_number}: nothing may follow EOF, found {:?}",
                shown(line)
            )),
        }
    }
    if problems.count() > 0 {
        return problems.into_result(VrpInput::default());
    }
    assemble(read)
}

/// `KEY : value` (or `KEY: value`), if the line is one.
fn header_field(text: &str) -> Option<(&str, &str)> {
    let (key, value) = text.split_once(':')?;
    let key = key.trim();
    (!key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
    .then(|| (key, value.trim()))
}

fn looks_numeric(text: &str) -> bool {
    text.split_whitespace()
        .all(|field| field.parse::<f64>().is_ok())
}

fn header(
    read: &mut Read,
    problems: &mut LineProblems,
    line_number: usize,
    key: &str,
    value: &str,
) {
    let value = value.trim_matches('"');
    match key {
        "NAME" => read.name = Some(value.to_owned()),
        "TYPE" => {
            if !matches!(value, "CVRP" | "VRPTW" | "CVRPTW") {
                problems.push(format!(
                    "line {line_number}: TYPE {value} is not supported: CVRP or VRPTW"
                ));
            }
        }
        "DIMENSION" => match value.parse::<usize>() {
            Ok(dimension)
                if dimension >= 1 && dimension <= read.max_nodes.min(u32::MAX as usize / 4) =>
            {
                read.dimension = Some((dimension, line_number));
                read.coordinates = vec![None; dimension];
                read.demands = vec![None; dimension];
                read.windows = vec![None; dimension];
                read.services = vec![None; dimension];
            }
            _ => problems.push(format!(
                "line {line_number}: DIMENSION {value:?} is not a node count"
            )),
        },
        "CAPACITY" => match value.parse::<f64>() {
            Ok(capacity) if capacity.is_finite() && capacity >= 0.0 => {
                read.capacity = Some(capacity)
            }
            _ => problems.push(format!(
                "line {line_number}: CAPACITY {value:?} is not a number"
            )),
        },
        "VEHICLES" => match value.parse::<u64>() {
            Ok(vehicles) => read.vehicles = Some(vehicles),
            _ => problems.push(format!(
                "line {line_number}: VEHICLES {value:?} is not a whole number"
            )),
        },
        "DISTANCE" => match value.parse::<f64>() {
            Ok(limit) if limit.is_finite() && limit >= 0.0 => read.distance_limit = Some(limit),
            _ => problems.push(format!(
                "line {line_number}: DISTANCE {value:?} is not a number"
            )),
        },
        "SERVICE_TIME" => match value.parse::<f64>() {
            Ok(service) if service.is_finite() && service >= 0.0 => {
                read.uniform_service = Some(service)
            }
            _ => problems.push(format!(
                "line {line_number}: SERVICE_TIME {value:?} is not a number"
            )),
        },
        "EDGE_WEIGHT_TYPE" => match value {
            "EUC_2D" => {}
            "EXPLICIT" => read.explicit = Some(line_number),
            _ => problems.push(format!(
                "line {line_number}: EDGE_WEIGHT_TYPE {value} is not supported: EUC_2D or EXPLICIT"
            )),
        },
        "EDGE_WEIGHT_FORMAT" => {
            let format = match value {
                "FULL_MATRIX" => Format::Full,
                "LOWER_ROW" => Format::LowerRow,
                "UPPER_ROW" => Format::UpperRow,
                "LOWER_DIAG_ROW" => Format::LowerDiagonalRow,
                "UPPER_DIAG_ROW" => Format::UpperDiagonalRow,
                _ => {
                    problems.push(format!(
                        "line {line_number}: EDGE_WEIGHT_FORMAT {value} is not supported: FULL_MATRIX, LOWER_ROW, UPPER_ROW, LOWER_DIAG_ROW or UPPER_DIAG_ROW"
                    ));
                    return;
                }
            };
            read.format = Some((format, line_number));
        }
        key if IGNORED_KEYS.contains(&key) => {}
        _ => problems.push(format!("line {line_number}: unknown field {key}")),
    }
}

/// A section line `node value...` with `N` values, its node 0-based.
fn node_line<const N: usize>(
    read: &Read,
    problems: &mut LineProblems,
    line_number: usize,
    line: &[u8],
) -> Option<(usize, [f64; N])> {
    let dimension = read.dimension.map_or(0, |(n, _)| n);
    let mut fields = line
        .split(|byte| byte.is_ascii_whitespace())
        .filter(|field| !field.is_empty());
    let node = fields.next().and_then(number::<usize>);
    let mut values = [0.0; N];
    let mut count = 0;
    for field in fields {
        if count < N {
            match number::<f64>(field) {
                Some(value) if value.is_finite() => values[count] = value,
                _ => {
                    count = N + 1;
                    break;
                }
            }
        }
        count += 1;
    }
    match node {
        Some(node) if node >= 1 && node <= dimension && count == N => Some((node - 1, values)),
        Some(node) if node < 1 || node > dimension => {
            problems.push(format!(
                "line {line_number}: node {node} is not between 1 and DIMENSION {dimension}"
            ));
            None
        }
        _ => {
            problems.push(format!(
                "line {line_number}: expected a node number and {N} number{}, found {:?}",
                if N == 1 { "" } else { "s" },
                shown(line)
            ));
            None
        }
    }
}

/// The input the file describes, or what it lacks.
fn assemble(read: Read) -> Result<VrpInput, Vec<Violation>> {
    let mut problems = LineProblems::default();
    let Some((dimension, _)) = read.dimension else {
        return Err(vec![Violation::new("", "the file has no DIMENSION")]);
    };
    let Some(capacity) = read.capacity else {
        return Err(vec![Violation::new("", "the file has no CAPACITY")]);
    };
    let depot = match read.depots.as_slice() {
        [] => 0,
        [(depot, _)] => *depot,
        [_, (_, line_number), ..] => {
            problems.push(format!("line {line_number}: only one depot is supported"));
            0
        }
    };
    // Nodes in the input's order: the depot, then the others as the file numbers them.
    let order: Vec<usize> = std::iter::once(depot)
        .chain((0..dimension).filter(|&node| node != depot))
        .collect();
    let matrix = match read.explicit {
        Some(line_number) => {
            let format = read.format.map_or(Format::Full, |(format, _)| format);
            match full_matrix(format, dimension, &read.weights) {
                Some(full) => Some(
                    order
                        .iter()
                        .map(|&i| {
                            order
                                .iter()
                                .map(|&j| Some(full[i * dimension + j]))
                                .collect()
                        })
                        .collect::<Vec<Vec<Option<f64>>>>(),
                ),
                None => {
                    problems.push(format!(
                        "line {}: EDGE_WEIGHT_SECTION has {} weights; a {format:?} matrix of {dimension} nodes has {} (EDGE_WEIGHT_TYPE EXPLICIT at line {line_number})",
                        read.weights_line,
                        read.weights.len(),
                        expected_weights(format, dimension)
                    ));
                    None
                }
            }
        }
        None => {
            if let Some(missing) = read.coordinates.iter().position(Option::is_none) {
                problems.push(format!(
                    "node {} has no coordinates in NODE_COORD_SECTION (EDGE_WEIGHT_TYPE EUC_2D needs them)",
                    missing + 1
                ));
            }
            None
        }
    };
    if problems.count() > 0 {
        return problems.into_result(VrpInput::default());
    }
    let point = |node: usize| read.coordinates[node];
    let service = |node: usize| {
        read.services[node]
            .or(read.uniform_service)
            .filter(|&s| s > 0.0)
    };
    let clients = order[1..]
        .iter()
        .map(|&node| Client {
            id: ClientId::Number(node as i64 + 1),
            x: point(node).map(|(x, _)| x),
            y: point(node).map(|(_, y)| y),
            demand: read.demands[node].filter(|&demand| demand != 0.0),
            service_time: service(node),
            time_window: read.windows[node],
        })
        .collect();
    Ok(VrpInput {
        name: read.name,
        depot: Depot {
            id: Some(ClientId::Number(depot as i64 + 1)),
            x: point(depot).map(|(x, _)| x),
            y: point(depot).map(|(_, y)| y),
            time_window: read.windows[depot],
        },
        clients,
        vehicles: Vehicles {
            count: read.vehicles,
            capacity,
            fixed_cost: None,
            max_duration: read.distance_limit,
        },
        rounding: read.explicit.is_none().then_some(Rounding::Round),
        distance_matrix: matrix,
        duration_matrix: None,
        fixed: None,
        initial_routes: None,
        unserved_penalty: None,
    })
}

fn expected_weights(format: Format, n: usize) -> usize {
    match format {
        Format::Full => n * n,
        Format::LowerRow | Format::UpperRow => n * (n - 1) / 2,
        Format::LowerDiagonalRow | Format::UpperDiagonalRow => n * (n + 1) / 2,
    }
}

/// The full row-major matrix from the listed weights, if there are as many as the format
/// needs.
fn full_matrix(format: Format, n: usize, weights: &[f64]) -> Option<Vec<f64>> {
    if weights.len() != expected_weights(format, n) {
        return None;
    }
    let mut full = vec![0.0; n * n];
    let mut values = weights.iter().copied();
    let mut set = |i: usize, j: usize, value: f64| {
        full[i * n + j] = value;
        full[j * n + i] = value;
    };
    match format {
        Format::Full => {
            for (index, value) in weights.iter().enumerate() {
                full[index] = *value;
            }
            return Some(full);
        }
        Format::LowerRow => {
            for i in 1..n {
                for j in 0..i {
                    set(i, j, values.next()?);
                }
            }
        }
        Format::UpperRow => {
            for i in 0..n {
                for j in i + 1..n {
                    set(i, j, values.next()?);
                }
            }
        }
        Format::LowerDiagonalRow => {
            for i in 0..n {
                for j in 0..=i {
                    set(i, j, values.next()?);
                }
            }
        }
        Format::UpperDiagonalRow => {
            for i in 0..n {
                for j in i..n {
                    set(i, j, values.next()?);
                }
            }
        }
    }
    Some(full)
}
