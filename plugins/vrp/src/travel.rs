//! Distances and travel times between locations, in the model's integer units: read from a
//! matrix, or computed from coordinates with the input's rounding, on the fly or from a
//! dense table where one fits.
//!
//! Location 0 is the depot, locations `1..=n` the clients in input order.

use crate::input::Rounding;

/// The largest dense table the solver builds from coordinates, in entries: 4,096 locations
/// as 32-bit integers take 64 MiB. Above, distances are computed when asked (a square root
/// each), which keeps a 10,000-client instance within a few megabytes.
pub const MAX_DENSE_ENTRIES: usize = 4096 * 4096;

/// One travel measure (distance or duration) between every pair of locations.
#[derive(Debug, Clone)]
pub enum Table {
    /// Euclidean distance between points, rounded and scaled to integer units.
    Euclid {
        x: Vec<f64>,
        y: Vec<f64>,
        rounding: Rounding,
    },
    /// A dense row-major matrix, when every entry fits 32 bits.
    Dense32 { size: usize, entries: Vec<i32> },
    /// A dense row-major matrix.
    Dense64 { size: usize, entries: Vec<i64> },
}

/// How many integer units one input unit of distance is, for each rounding.
pub fn rounding_scale(rounding: Rounding) -> i64 {
    match rounding {
        Rounding::Round => 1,
        Rounding::OneDecimal => 10,
        Rounding::Exact => 1000,
    }
}

/// The Euclidean distance `d` in integer units: `nint(d)` (TSPLIB's EUC_2D), `trunc(10 d)`
/// (DIMACS) or `round(1000 d)`.
/// Casts truncate toward zero, which for the non-negative distances is `floor`, without a
/// libm call (x86-64's baseline has no rounding instruction).
#[inline]
pub fn rounded(distance: f64, rounding: Rounding) -> i64 {
    match rounding {
        Rounding::Round => (distance + 0.5) as i64,
        Rounding::OneDecimal => (distance * 10.0) as i64,
        Rounding::Exact => (distance * 1000.0 + 0.5) as i64,
    }
}

/// The rounded Euclidean distance between two points.
#[inline(never)]
fn euclid(x: &[f64], y: &[f64], rounding: Rounding, from: u32, to: u32) -> i64 {
    let (from, to) = (from as usize, to as usize);
    let dx = x[from] - x[to];
    let dy = y[from] - y[to];
    rounded((dx * dx + dy * dy).sqrt(), rounding)
}

impl Table {
    /// A table from a row-major matrix, 32-bit if every entry fits.
    pub fn dense(size: usize, entries: Vec<i64>) -> Table {
        if entries.iter().all(|&entry| i32::try_from(entry).is_ok()) {
            Table::Dense32 {
                size,
                entries: entries.into_iter().map(|entry| entry as i32).collect(),
            }
        } else {
            Table::Dense64 { size, entries }
        }
    }

    /// The measure from location `from` to location `to`.
    #[inline(always)]
    pub fn get(&self, from: u32, to: u32) -> i64 {
        match self {
            Table::Dense32 { size, entries } => {
                i64::from(entries[from as usize * size + to as usize])
            }
            Table::Dense64 { size, entries } => entries[from as usize * size + to as usize],
            Table::Euclid { x, y, rounding } => euclid(x, y, *rounding, from, to),
        }
    }

    /// The number of locations.
    pub fn size(&self) -> usize {
        match self {
            Table::Dense32 { size, .. } | Table::Dense64 { size, .. } => *size,
            Table::Euclid { x, .. } => x.len(),
        }
    }

    /// The same measure as a dense table if it is computed from coordinates and small
    /// enough ([`MAX_DENSE_ENTRIES`]); otherwise a copy of itself.
    pub fn densified(&self) -> Table {
        let size = self.size();
        match self {
            Table::Euclid { .. } if size.saturating_mul(size) <= MAX_DENSE_ENTRIES => {
                let mut entries = Vec::with_capacity(size * size);
                for from in 0..size as u32 {
                    for to in 0..size as u32 {
                        entries.push(self.get(from, to));
                    }
                }
                Table::dense(size, entries)
            }
            other => other.clone(),
        }
    }
}

/// Distances and durations between locations.
#[derive(Debug, Clone)]
pub struct Travel {
    pub distance: Table,
    /// Durations when they differ from distances.
    pub duration: Option<Table>,
}

impl Travel {
    #[inline(always)]
    pub fn dist(&self, from: u32, to: u32) -> i64 {
        self.distance.get(from, to)
    }

    #[inline(always)]
    pub fn time(&self, from: u32, to: u32) -> i64 {
        match &self.duration {
            Some(duration) => duration.get(from, to),
            None => self.distance.get(from, to),
        }
    }

    /// The same travel with dense tables where they fit (see [`Table::densified`]).
    pub fn densified(&self) -> Travel {
        Travel {
            distance: self.distance.densified(),
            duration: self.duration.as_ref().map(Table::densified),
        }
    }

    /// Whether every distance equals its reverse, so a reversed path costs the same.
    pub fn symmetric(&self) -> bool {
        match (&self.distance, &self.duration) {
            (Table::Euclid { .. }, None) => true,
            (table, None) => {
                let size = table.size() as u32;
                (0..size).all(|from| {
                    (from + 1..size).all(|to| table.get(from, to) == table.get(to, from))
                })
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundings_follow_their_conventions() {
        let five = 5.0_f64;
        assert_eq!(rounded(five, Rounding::Round), 5);
        assert_eq!(rounded(2.5, Rounding::Round), 3);
        assert_eq!(rounded(2.49, Rounding::Round), 2);
        // DIMACS: sqrt(2) = 1.41421... becomes 14 tenths.
        assert_eq!(rounded(2.0_f64.sqrt(), Rounding::OneDecimal), 14);
        assert_eq!(rounded(2.0_f64.sqrt(), Rounding::Exact), 1414);
        let table = Table::Euclid {
            x: vec![0.0, 3.0],
            y: vec![0.0, 4.0],
            rounding: Rounding::OneDecimal,
        };
        assert_eq!(table.get(0, 1), 50);
        assert_eq!(table.densified().get(1, 0), 50);
    }
}
