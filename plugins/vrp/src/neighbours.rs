//! Granular neighbourhoods (Toth and Vigo 2003): the local search pairs each client only with
//! its Γ nearest, by a proximity that, with time windows, also counts the wait and the
//! lateness visiting one after the other implies (Vidal et al. 2013; PyVRP's weights). Lists
//! are made symmetric, as HGS-CVRP does: `j` is `i`'s neighbour if either is among the
//! other's nearest.
//!
//! Up to [`EXACT_LIMIT`] clients, or without coordinates, every pair is measured; above, a
//! grid over the coordinates finds each client's nearest candidates in about linear time.

use std::collections::BinaryHeap;

use crate::travel::Travel;

/// Settings of the granular neighbourhood.
#[derive(Debug, Clone, Copy)]
pub struct NeighbourSettings {
    /// Neighbours per client (Γ).
    pub count: usize,
    /// Weight of the wait a visit to `j` after `i` implies (time windows only).
    pub wait_weight: f64,
    /// Weight of the lateness a visit to `j` after `i` implies (time windows only).
    pub warp_weight: f64,
}

/// What the neighbourhoods are measured on: the problem's tables, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'a> {
    pub num_clients: usize,
    pub travel: &'a Travel,
    pub service: &'a [i64],
    pub early: &'a [i64],
    pub late: &'a [i64],
    /// Whether schedules matter (windows or a duration limit).
    pub timed: bool,
    /// The clients the search moves.
    pub movable: &'a [u32],
    pub coordinates: Option<&'a (Vec<f64>, Vec<f64>)>,
}

/// The most clients whose neighbours are found by measuring every pair.
pub const EXACT_LIMIT: usize = 3000;

/// Neighbour lists per location `0..=n`: empty for the depot and clients that never move.
pub fn granular(problem: &Tables<'_>, settings: NeighbourSettings) -> Vec<Vec<u32>> {
    let n = problem.num_clients;
    let movable = problem.movable;
    let count = settings.count.min(movable.len().saturating_sub(1));
    let mut nearest: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    if count == 0 {
        return nearest;
    }
    match problem.coordinates {
        Some((x, y)) if movable.len() > EXACT_LIMIT => {
            // The proximity's extra terms need a wider spatial pool to choose from.
            let pool = if problem.timed { 3 * count } else { count };
            let grid = Grid::new(x, y, movable);
            let mut candidates = Vec::new();
            for &client in movable {
                grid.nearest(client, pool.min(movable.len() - 1), &mut candidates);
                let mut ranked: Vec<(f64, u32)> = candidates
                    .iter()
                    .map(|&other| (proximity(problem, settings, client, other), other))
                    .collect();
                ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                nearest[client as usize] = ranked.iter().take(count).map(|&(_, j)| j).collect();
            }
        }
        _ => {
            let mut row: Vec<(f64, u32)> = Vec::with_capacity(movable.len());
            for &client in movable {
                row.clear();
                row.extend(
                    movable
                        .iter()
                        .filter(|&&other| other != client)
                        .map(|&other| (proximity(problem, settings, client, other), other)),
                );
                let order =
                    |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
                if row.len() > count {
                    row.select_nth_unstable_by(count, order);
                    row.truncate(count);
                }
                row.sort_by(order);
                nearest[client as usize] = row.iter().map(|&(_, j)| j).collect();
            }
        }
    }
    // Symmetric lists: j joins i's list when i is among j's nearest.
    let mut lists = nearest.clone();
    let mut member = vec![false; n + 1];
    for &client in movable {
        for &other in &nearest[client as usize] {
            let list = &mut lists[other as usize];
            // Linear membership checks on short lists; the marks are reset per list below.
            if !list.contains(&client) {
                list.push(client);
            }
        }
    }
    for list in &mut lists {
        list.retain(|&j| {
            let fresh = !member[j as usize];
            member[j as usize] = true;
            fresh
        });
        for &j in list.iter() {
            member[j as usize] = false;
        }
    }
    lists
}

/// How close visiting `j` after `i`, or `i` after `j`, is: the distance, plus with time
/// windows the weighted wait and lateness it implies; the smaller of the two orders.
pub fn proximity(problem: &Tables<'_>, settings: NeighbourSettings, i: u32, j: u32) -> f64 {
    let one_way = |from: u32, to: u32| -> f64 {
        let distance = problem.travel.dist(from, to) as f64;
        if !problem.timed {
            return distance;
        }
        let (f, t) = (from as usize, to as usize);
        let travel = problem.travel.time(from, to);
        let wait = (problem.early[t] - problem.service[f] - travel - problem.late[f]).max(0);
        let warp = (problem.early[f] + problem.service[f] + travel - problem.late[t]).max(0);
        distance + settings.wait_weight * wait as f64 + settings.warp_weight * warp as f64
    };
    one_way(i, j).min(one_way(j, i))
}

/// A uniform grid over the clients' coordinates, about two clients a cell.
struct Grid<'a> {
    x: &'a [f64],
    y: &'a [f64],
    min_x: f64,
    min_y: f64,
    cell: f64,
    side: usize,
    /// Clients by cell, `cell_start[c]..cell_start[c + 1]` in `members`.
    cell_start: Vec<u32>,
    members: Vec<u32>,
}

impl<'a> Grid<'a> {
    fn new(x: &'a [f64], y: &'a [f64], clients: &[u32]) -> Grid<'a> {
        let (mut min_x, mut max_x, mut min_y, mut max_y) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &client in clients {
            let c = client as usize;
            min_x = min_x.min(x[c]);
            max_x = max_x.max(x[c]);
            min_y = min_y.min(y[c]);
            max_y = max_y.max(y[c]);
        }
        let side = ((clients.len() as f64 / 2.0).sqrt().ceil() as usize).max(1);
        let extent = (max_x - min_x).max(max_y - min_y).max(1e-9);
        let cell = extent / side as f64 * (1.0 + 1e-9);
        let mut grid = Grid {
            x,
            y,
            min_x,
            min_y,
            cell,
            side,
            cell_start: vec![0; side * side + 1],
            members: vec![0; clients.len()],
        };
        for &client in clients {
            let cell = grid.cell_of(client);
            grid.cell_start[cell + 1] += 1;
        }
        for cell in 0..side * side {
            grid.cell_start[cell + 1] += grid.cell_start[cell];
        }
        let mut fill = grid.cell_start.clone();
        for &client in clients {
            let cell = grid.cell_of(client);
            grid.members[fill[cell] as usize] = client;
            fill[cell] += 1;
        }
        grid
    }

    fn coordinates(&self, client: u32) -> (usize, usize) {
        let c = client as usize;
        let column = (((self.x[c] - self.min_x) / self.cell) as usize).min(self.side - 1);
        let row = (((self.y[c] - self.min_y) / self.cell) as usize).min(self.side - 1);
        (column, row)
    }

    fn cell_of(&self, client: u32) -> usize {
        let (column, row) = self.coordinates(client);
        row * self.side + column
    }

    /// The `count` clients nearest to `client` (Euclidean), into `found`, in no order.
    fn nearest(&self, client: u32, count: usize, found: &mut Vec<u32>) {
        found.clear();
        let (column, row) = self.coordinates(client);
        let c = client as usize;
        // A max-heap of (squared distance, client) holding the best `count` so far.
        let mut heap: BinaryHeap<(OrderedDistance, u32)> = BinaryHeap::with_capacity(count + 1);
        let side = self.side as isize;
        for ring in 0..=side {
            // Every point outside the rings searched is at least this far away.
            if heap.len() == count {
                let reach = (ring - 1).max(0) as f64 * self.cell;
                if let Some(&(OrderedDistance(worst), _)) = heap.peek()
                    && worst <= reach * reach
                {
                    break;
                }
            }
            let (column, row) = (column as isize, row as isize);
            for cell_row in (row - ring).max(0)..=(row + ring).min(side - 1) {
                let edge_row = cell_row == row - ring || cell_row == row + ring;
                for cell_column in (column - ring).max(0)..=(column + ring).min(side - 1) {
                    // Inside the ring's square only its first and last columns are new.
                    if !edge_row && cell_column != column - ring && cell_column != column + ring {
                        continue;
                    }
                    let cell = cell_row as usize * self.side + cell_column as usize;
                    for &other in &self.members
                        [self.cell_start[cell] as usize..self.cell_start[cell + 1] as usize]
                    {
                        if other == client {
                            continue;
                        }
                        let o = other as usize;
                        let dx = self.x[o] - self.x[c];
                        let dy = self.y[o] - self.y[c];
                        let squared = dx * dx + dy * dy;
                        if heap.len() < count {
                            heap.push((OrderedDistance(squared), other));
                        } else if let Some(&(OrderedDistance(worst), worst_client)) = heap.peek()
                            && (squared < worst || (squared == worst && other < worst_client))
                        {
                            heap.pop();
                            heap.push((OrderedDistance(squared), other));
                        }
                    }
                }
            }
        }
        found.extend(heap.into_iter().map(|(_, other)| other));
    }
}

/// A squared distance ordered as a float (never NaN here).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedDistance(f64);

impl Eq for OrderedDistance {}

impl PartialOrd for OrderedDistance {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedDistance {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
