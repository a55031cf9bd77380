//! The population of HGS (Vidal et al. 2012; HGS-CVRP): feasible and infeasible plans in two
//! sub-populations, each ranked by biased fitness, which weighs a plan's penalised cost rank
//! against its contribution to diversity (its mean broken-pairs distance to its closest
//! neighbours). A sub-population that outgrows `min_size + generation` is cut back to
//! `min_size`, clones first, then the worst by biased fitness; the best plan is never cut.
//! Parents are chosen by binary tournament on biased fitness.

use crate::penalty::Penalties;
use crate::rng::Rng;
use crate::solution::Individual;

/// Settings of the population.
#[derive(Debug, Clone, Copy)]
pub struct PopulationSettings {
    /// μ: the size a sub-population is cut back to.
    pub min_size: usize,
    /// λ: how many plans a sub-population takes before it is cut back.
    pub generation: usize,
    /// How many of the best plans keep their rank whatever their diversity.
    pub elite: usize,
    /// How many closest plans a plan's diversity is measured against.
    pub close: usize,
}

/// A plan in a sub-population.
struct Member {
    id: u64,
    individual: Individual,
    penalised: i64,
    fitness: f64,
    /// Broken-pairs distances to the others, nearest first.
    proximity: Vec<(f64, u64)>,
}

impl Member {
    fn diversity(&self, close: usize) -> f64 {
        let count = close.min(self.proximity.len());
        if count == 0 {
            return 0.0;
        }
        self.proximity[..count]
            .iter()
            .map(|&(distance, _)| distance)
            .sum::<f64>()
            / count as f64
    }
}

/// One sub-population, kept in order of penalised cost.
#[derive(Default)]
struct SubPopulation {
    members: Vec<Member>,
}

/// Both sub-populations.
pub struct Population {
    settings: PopulationSettings,
    feasible: SubPopulation,
    infeasible: SubPopulation,
    next_id: u64,
    movable: Vec<u32>,
}

impl Population {
    pub fn new(settings: PopulationSettings, movable: Vec<u32>) -> Population {
        Population {
            settings,
            feasible: SubPopulation::default(),
            infeasible: SubPopulation::default(),
            next_id: 0,
            movable,
        }
    }

    pub fn len(&self) -> usize {
        self.feasible.members.len() + self.infeasible.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties both sub-populations (a restart).
    pub fn clear(&mut self) {
        self.feasible.members.clear();
        self.infeasible.members.clear();
    }

    /// Adds a plan to its sub-population.
    pub fn add(&mut self, individual: Individual, penalties: &Penalties) {
        let id = self.next_id;
        self.next_id += 1;
        let settings = self.settings;
        let movable = &self.movable;
        let sub = if individual.cost.feasible() {
            &mut self.feasible
        } else {
            &mut self.infeasible
        };
        let penalised = individual.penalised(penalties);
        let mut proximity = Vec::with_capacity(sub.members.len());
        for member in &mut sub.members {
            let distance = individual.broken_pairs(&member.individual, movable);
            let at = member
                .proximity
                .partition_point(|&(d, other)| (d, other) < (distance, id));
            member.proximity.insert(at, (distance, id));
            proximity.push((distance, member.id));
        }
        proximity.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let at = sub
            .members
            .partition_point(|member| (member.penalised, member.id) < (penalised, id));
        sub.members.insert(
            at,
            Member {
                id,
                individual,
                penalised,
                fitness: 0.0,
                proximity,
            },
        );
        if sub.members.len() > settings.min_size + settings.generation {
            while sub.members.len() > settings.min_size {
                sub.remove_worst(settings);
            }
        }
    }

    /// Re-prices the infeasible plans after the penalties changed.
    pub fn reprice(&mut self, penalties: &Penalties) {
        for member in &mut self.infeasible.members {
            member.penalised = member.individual.penalised(penalties);
        }
        self.infeasible
            .members
            .sort_by_key(|member| (member.penalised, member.id));
    }

    /// A parent chosen by binary tournament on biased fitness over both sub-populations.
    pub fn tournament(&mut self, rng: &mut Rng) -> &Individual {
        self.feasible.update_fitness(self.settings);
        self.infeasible.update_fitness(self.settings);
        let total = self.len();
        let pick = |rng: &mut Rng| rng.index(total);
        let (a, b) = (pick(rng), pick(rng));
        let member = |index: usize| -> &Member {
            if index < self.feasible.members.len() {
                &self.feasible.members[index]
            } else {
                &self.infeasible.members[index - self.feasible.members.len()]
            }
        };
        let (first, second) = (member(a), member(b));
        if first.fitness <= second.fitness {
            &first.individual
        } else {
            &second.individual
        }
    }

    /// The cheapest feasible plan, if any.
    pub fn best_feasible(&self) -> Option<&Individual> {
        self.feasible
            .members
            .first()
            .map(|member| &member.individual)
    }

    /// Every plan, feasible ones first, each sub-population cheapest first.
    pub fn individuals(&self) -> impl Iterator<Item = &Individual> {
        self.feasible
            .members
            .iter()
            .chain(&self.infeasible.members)
            .map(|member| &member.individual)
    }

    /// The mean broken-pairs distance between plans, a measure of diversity for logs.
    pub fn diversity(&self) -> f64 {
        let all: Vec<&Member> = self
            .feasible
            .members
            .iter()
            .chain(&self.infeasible.members)
            .collect();
        if all.is_empty() {
            return 0.0;
        }
        all.iter()
            .map(|member| member.diversity(self.settings.close))
            .sum::<f64>()
            / all.len() as f64
    }
}

impl SubPopulation {
    /// Biased fitness: cost rank plus (1 - elite / size) times diversity rank, both over
    /// `size - 1`.
    fn update_fitness(&mut self, settings: PopulationSettings) {
        let size = self.members.len();
        if size == 0 {
            return;
        }
        if size == 1 {
            self.members[0].fitness = 0.0;
            return;
        }
        // Members are in cost order; rank them by diversity, most diverse first.
        let mut by_diversity: Vec<(f64, usize)> = self
            .members
            .iter()
            .enumerate()
            .map(|(rank, member)| (-member.diversity(settings.close), rank))
            .collect();
        by_diversity.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let scale = (size - 1) as f64;
        let elite_weight = 1.0 - settings.elite as f64 / size as f64;
        for (diversity_rank, &(_, cost_rank)) in by_diversity.iter().enumerate() {
            self.members[cost_rank].fitness =
                cost_rank as f64 / scale + elite_weight * diversity_rank as f64 / scale;
        }
    }

    /// Removes the worst member by biased fitness, clones first; never the cheapest.
    fn remove_worst(&mut self, settings: PopulationSettings) {
        self.update_fitness(settings);
        let mut worst = 1;
        let mut worst_key = (false, f64::MIN);
        for (index, member) in self.members.iter().enumerate().skip(1) {
            let clone = member
                .proximity
                .first()
                .is_some_and(|&(distance, _)| distance < 1e-9);
            let key = (clone, member.fitness);
            if (key.0 && !worst_key.0) || (key.0 == worst_key.0 && key.1 > worst_key.1) {
                worst = index;
                worst_key = key;
            }
        }
        let removed = self.members.remove(worst);
        for member in &mut self.members {
            member.proximity.retain(|&(_, other)| other != removed.id);
        }
    }
}
