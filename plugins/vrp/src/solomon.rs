//! Solomon's VRPTW text format (`text/x-solomon`), as his 1987 instances and Gehring and
//! Homberger's are published: the instance's name, a `VEHICLE` block (`NUMBER CAPACITY`
//! and their values), then a `CUSTOMER` block whose header line is followed by one line per
//! customer: number, x, y, demand, ready time, due date, service time. Customer 0 is the
//! depot, whose window is the horizon. Every malformed line is reported by its number.

use caseload_sdk::Violation;
use caseload_sdk::text::{LineProblems, fields, number, numbered_lines, shown};

use crate::input::{Client, ClientId, Depot, Rounding, Vehicles, VrpInput};

/// The media type of Solomon files.
pub const MEDIA_TYPE: &str = "text/x-solomon";

/// Whether a text file looks like Solomon's format (a `VEHICLE` and a `CUSTOMER` line)
/// rather than VRPLIB's.
pub fn sniff(data: &[u8]) -> bool {
    let mut vehicle = false;
    let mut customer = false;
    for (_, line) in numbered_lines(data).take(20) {
        vehicle |= line.eq_ignore_ascii_case(b"VEHICLE");
        customer |= line.eq_ignore_ascii_case(b"CUSTOMER");
    }
    vehicle && customer
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Name,
    VehicleTitle,
    VehicleHeader,
    VehicleValues,
    CustomerTitle,
    CustomerHeader,
    Customers,
}

/// Reads a Solomon file into the input it describes.
pub fn parse(data: &[u8]) -> Result<VrpInput, Vec<Violation>> {
    let mut problems = LineProblems::default();
    let mut expect = Expect::Name;
    let mut name = None;
    let mut fleet = None;
    let mut depot = None;
    let mut clients = Vec::new();
    for (line_number, line) in numbered_lines(data) {
        let text = String::from_utf8_lossy(line);
        let upper = text.to_ascii_uppercase();
        match expect {
            Expect::Name => {
                name = Some(text.trim().to_owned());
                expect = Expect::VehicleTitle;
            }
            Expect::VehicleTitle if upper == "VEHICLE" => expect = Expect::VehicleHeader,
            Expect::VehicleHeader if upper.starts_with("NUMBER") => expect = Expect::VehicleValues,
            Expect::VehicleValues => {
                match fields::<2>(line).and_then(|[count, capacity]| {
                    Some((number::<u64>(count)?, number::<f64>(capacity).filter(|c| c.is_finite() && *c >= 0.0)?))
                }) {
                    Some(values) => fleet = Some(values),
                    None => problems.push(format!(
                        "line {line_number}: expected the number of vehicles and their capacity, found {:?}",
                        shown(line)
                    )),
                }
                expect = Expect::CustomerTitle;
            }
            Expect::CustomerTitle if upper == "CUSTOMER" => expect = Expect::CustomerHeader,
            Expect::CustomerHeader if upper.starts_with("CUST") => expect = Expect::Customers,
            Expect::Customers => match customer(line) {
                Some((id, point, demand, window, service)) => {
                    if id == 0 && depot.is_none() {
                        depot = Some((point, window));
                    } else {
                        clients.push(Client {
                            id: ClientId::Number(id),
                            x: Some(point.0),
                            y: Some(point.1),
                            demand: (demand != 0.0).then_some(demand),
                            service_time: (service != 0.0).then_some(service),
                            time_window: Some(window),
                        });
                    }
                }
                None => problems.push(format!(
                    "line {line_number}: expected 7 numbers (customer, x, y, demand, ready time, due date, service time), found {:?}",
                    shown(line)
                )),
            },
            _ => problems.push(format!(
                "line {line_number}: expected {}, found {:?}",
                match expect {
                    Expect::VehicleTitle => "VEHICLE",
                    Expect::VehicleHeader => "the header NUMBER CAPACITY",
                    Expect::CustomerTitle => "CUSTOMER",
                    _ => "the customer table's header (CUST NO. XCOORD. ...)",
                },
                shown(line)
            )),
        }
    }
    if problems.count() > 0 {
        return problems.into_result(VrpInput::default());
    }
    let Some((count, capacity)) = fleet else {
        return Err(vec![Violation::new("", "the file has no VEHICLE block")]);
    };
    let Some(((x, y), window)) = depot else {
        return Err(vec![Violation::new(
            "",
            "the file has no depot: the customer table's first line is customer 0",
        )]);
    };
    Ok(VrpInput {
        name,
        depot: Depot {
            id: Some(ClientId::Number(0)),
            x: Some(x),
            y: Some(y),
            time_window: Some(window),
        },
        clients,
        vehicles: Vehicles {
            count: Some(count),
            capacity,
            fixed_cost: None,
            max_duration: None,
        },
        rounding: Some(Rounding::OneDecimal),
        distance_matrix: None,
        duration_matrix: None,
        fixed: None,
        initial_routes: None,
        unserved_penalty: None,
    })
}

/// One customer line: number, point, demand, window, service time.
type Customer = (i64, (f64, f64), f64, [f64; 2], f64);

fn customer(line: &[u8]) -> Option<Customer> {
    let [id, x, y, demand, ready, due, service] = fields::<7>(line)?;
    let value = |field: &[u8]| number::<f64>(field).filter(|value| value.is_finite());
    Some((
        number::<i64>(id)?,
        (value(x)?, value(y)?),
        value(demand)?,
        [value(ready)?, value(due)?],
        value(service)?,
    ))
}
