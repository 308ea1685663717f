//! The autotuner's genetic search (TC §6.2) over an abstract space: each
//! gene is one tuning parameter with a finite list of values, a candidate
//! (a [`Genome`]) picks one value index per gene, and the caller measures
//! candidates a generation at a time (so it can compile them in parallel
//! and time them in isolation).
//!
//! Generation zero is the seeds (the cost model's default record and the
//! best cached ones) and random candidates up to the population. Each
//! generation after it keeps the `elites` fastest candidates so far as
//! they are, and breeds the rest: with probability `crossover` a child
//! takes each gene from one of three parents drawn with probability
//! proportional to their fitness (the inverse of their time; a failed or
//! pruned candidate has none), otherwise it is a copy of one such parent;
//! then each gene mutates to a random value with probability `mutation`.
//!
//! Beyond TC: when the caller puts each gene in a group (the genes of one
//! stage of a kernel, whose time it measures apart) and gives each timed
//! candidate's time per group, each generation after the first also holds
//! the composite of the fastest parts seen so far: every group's genes from
//! the candidate whose time in that group was least. A kernel's stages run
//! one after another, so where their choices do not interact the composite
//! is as fast as the sum of the best parts, which breeding alone finds only
//! by the luck of crossing the right parents (the three passes of a
//! normalization were each best in a different candidate).
//!
//! A candidate measured once is never measured again: its outcome is
//! remembered. Every draw comes from one generator seeded by
//! [`Params::seed`], so a search is reproducible given the same outcomes.
//!
//! Guarantees: the best candidate reported is the fastest that was timed,
//! never a failed or pruned one; the search stops when `stop` says so
//! (Ctrl-C, the budget) between generations, or when `measure` stops
//! within one (its outcomes then cover the first candidates only), and
//! reports what it found.

use std::collections::HashMap;

use tensor::SplitMix64;

/// One value index per gene.
pub type Genome = Vec<usize>;

/// The search's parameters; the defaults are TC's.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub population: usize,
    pub generations: usize,
    /// The probability that a child is bred from three parents rather than
    /// copied from one.
    pub crossover: f64,
    /// The probability that each gene of a child takes a random value.
    pub mutation: f64,
    /// The fastest candidates kept as they are into the next generation.
    pub elites: usize,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            population: 100,
            generations: 25,
            crossover: 0.8,
            mutation: 0.07,
            elites: 10,
            seed: 0,
        }
    }
}

/// A timed candidate's time in each group of genes, in seconds (`None`
/// where it was not measured apart); empty without groups.
pub type Parts = Vec<Option<f64>>;

/// What measuring a candidate gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Its time, in seconds.
    Time(f64),
    /// It did not run to the end: a crash, a hang, a wrong result, a
    /// compile error; the reason.
    Failed(String),
    /// Its first runs were so much slower than the best that timing it was
    /// stopped.
    Pruned,
}

/// Where the search is, after each generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub generation: usize,
    pub best: Option<f64>,
    pub measured: usize,
    pub failed: usize,
}

/// Measures a generation's new candidates, given the best time so far:
/// one outcome per candidate, in order, with its parts; fewer when it was
/// stopped (the outcomes are then the first candidates').
pub type Measure<'a> = dyn FnMut(&[Genome], Option<f64>) -> Vec<(Outcome, Parts)> + 'a;

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The fastest candidate timed and its time.
    pub best: Option<(Genome, f64)>,
    /// Every candidate measured, in the order measured, with its outcome.
    pub measured: Vec<(Genome, Outcome)>,
    /// The generations run.
    pub generations: usize,
}

/// Searches the space whose gene `g` has `genes[g]` values (at least one
/// each) and is in group `groups[g]` (`groups` empty: no groups), starting
/// from `seeds`. `measure` gets the generation's
/// candidates not measured before and the best time so far, and gives one
/// outcome per candidate (or per first candidates, when it stopped);
/// `progress` sees each generation's end; `stop` is asked before each
/// generation.
pub fn search(
    genes: &[usize],
    groups: &[usize],
    params: &Params,
    seeds: &[Genome],
    measure: &mut Measure,
    progress: &mut dyn FnMut(&Progress),
    stop: &dyn Fn() -> bool,
) -> Report {
    let mut rng = SplitMix64::new(params.seed);
    let population = params.population.max(1);
    let random =
        |rng: &mut SplitMix64| -> Genome { genes.iter().map(|&n| below(rng, n.max(1))).collect() };
    let valid = |g: &Genome| g.len() == genes.len() && g.iter().zip(genes).all(|(&v, &n)| v < n);
    let mut generation: Vec<Genome> = Vec::new();
    for s in seeds.iter().filter(|s| valid(s)) {
        if !generation.contains(s) && generation.len() < population {
            generation.push(s.clone());
        }
    }
    // Random candidates fill the rest; a space smaller than the population
    // gives fewer distinct ones, and the attempts are bounded.
    let mut attempts = 0;
    while generation.len() < population && attempts < 20 * population {
        attempts += 1;
        let g = random(&mut rng);
        if !generation.contains(&g) {
            generation.push(g);
        }
    }
    let mut seen: HashMap<Genome, Outcome> = HashMap::new();
    let mut parts: HashMap<Genome, Parts> = HashMap::new();
    let mut report = Report {
        best: None,
        measured: Vec::new(),
        generations: 0,
    };
    for k in 0..params.generations.max(1) {
        if stop() {
            break;
        }
        let mut fresh: Vec<Genome> = Vec::new();
        for g in &generation {
            if !seen.contains_key(g) && !fresh.contains(g) {
                fresh.push(g.clone());
            }
        }
        let best = report.best.as_ref().map(|(_, t)| *t);
        let outcomes = if fresh.is_empty() {
            Vec::new()
        } else {
            measure(&fresh, best)
        };
        for (g, (o, p)) in fresh.into_iter().zip(outcomes) {
            if matches!(o, Outcome::Time(_))
                && p.len() == 1 + groups.iter().max().copied().unwrap_or(0)
            {
                parts.insert(g.clone(), p);
            }
            if let Outcome::Time(t) = o {
                if t.is_finite() && report.best.as_ref().is_none_or(|(_, b)| t < *b) {
                    report.best = Some((g.clone(), t));
                }
            }
            report.measured.push((g.clone(), o.clone()));
            seen.insert(g, o);
        }
        report.generations = k + 1;
        progress(&Progress {
            generation: k + 1,
            best: report.best.as_ref().map(|(_, t)| *t),
            measured: report.measured.len(),
            failed: report
                .measured
                .iter()
                .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
                .count(),
        });
        let composite = composite(groups, &parts, &seen);
        generation = breed(
            &generation,
            &seen,
            composite,
            genes,
            params,
            population,
            &mut rng,
        );
    }
    report
}

/// The composite of the fastest parts in `parts`: each group's genes from
/// the candidate whose time in it was least (when no candidate was timed
/// in a group, from the fastest candidate overall); `None` when it was
/// measured already or there are no groups.
fn composite(
    groups: &[usize],
    parts: &HashMap<Genome, Parts>,
    seen: &HashMap<Genome, Outcome>,
) -> Option<Genome> {
    let count = 1 + *groups.iter().max()?;
    // Ties go to the least genome, so that the search is reproducible.
    let least = |key: &dyn Fn(&Genome) -> Option<f64>| {
        parts
            .keys()
            .filter_map(|g| key(g).map(|t| (t, g)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)))
            .map(|(_, g)| g)
    };
    let fastest = least(&|g| match seen.get(g) {
        Some(Outcome::Time(t)) => Some(*t),
        _ => None,
    })?;
    let from: Vec<&Genome> = (0..count)
        .map(|k| least(&|g| parts[g][k]).unwrap_or(fastest))
        .collect();
    let child: Genome = groups
        .iter()
        .enumerate()
        .map(|(i, &k)| from[k][i])
        .collect();
    (!seen.contains_key(&child)).then_some(child)
}

/// The next generation from `current`, whose outcomes are in `seen`.
fn breed(
    current: &[Genome],
    seen: &HashMap<Genome, Outcome>,
    composite: Option<Genome>,
    genes: &[usize],
    params: &Params,
    population: usize,
    rng: &mut SplitMix64,
) -> Vec<Genome> {
    let time = |g: &Genome| match seen.get(g) {
        Some(Outcome::Time(t)) if t.is_finite() && *t > 0.0 => Some(*t),
        _ => None,
    };
    // The elites: the fastest of everything timed so far.
    let mut timed: Vec<(&Genome, f64)> = seen
        .keys()
        .filter_map(|g| time(g).map(|t| (g, t)))
        .collect();
    timed.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0)));
    let mut next: Vec<Genome> = timed
        .iter()
        .take(params.elites.min(population))
        .map(|(g, _)| (*g).clone())
        .collect();
    if let Some(c) = composite.filter(|_| next.len() < population) {
        next.push(c);
    }
    // Parents: this generation's timed candidates, by fitness.
    let parents: Vec<(&Genome, f64)> = current
        .iter()
        .filter_map(|g| time(g).map(|t| (g, 1.0 / t)))
        .collect();
    let total: f64 = parents.iter().map(|(_, f)| f).sum();
    let pick = |rng: &mut SplitMix64| -> Option<&Genome> {
        if parents.is_empty() || total <= 0.0 {
            return None;
        }
        let mut x = unit(rng) * total;
        for (g, f) in &parents {
            if x < *f {
                return Some(g);
            }
            x -= f;
        }
        parents.last().map(|(g, _)| *g)
    };
    while next.len() < population {
        let mut child: Genome = match pick(rng) {
            None => genes.iter().map(|&n| below(rng, n.max(1))).collect(),
            Some(first) if unit(rng) < params.crossover => {
                let second = pick(rng).unwrap_or(first);
                let third = pick(rng).unwrap_or(first);
                (0..genes.len())
                    .map(|k| [first, second, third][below(rng, 3)][k])
                    .collect()
            }
            Some(only) => only.clone(),
        };
        for (v, &n) in child.iter_mut().zip(genes) {
            if unit(rng) < params.mutation {
                *v = below(rng, n.max(1));
            }
        }
        next.push(child);
    }
    next
}

/// A uniform draw from `0..n` (`n` at least 1).
fn below(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A uniform draw from `[0, 1)`.
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The tile sizes TC draws for an extent: the powers of two up to it and
/// its ceil-divisions by powers of two, ascending.
pub fn tile_values(extent: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut p = 1u64;
    while p <= extent {
        out.push(p);
        out.push(extent.div_ceil(p));
        let Some(q) = p.checked_mul(2) else { break };
        p = q;
    }
    if out.is_empty() {
        out.push(1);
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A separable cost with its minimum, 1.0, at `target`.
    fn cost(g: &Genome, target: &[usize]) -> f64 {
        1.0 + g
            .iter()
            .zip(target)
            .map(|(&a, &b)| a.abs_diff(b) as f64)
            .sum::<f64>()
    }

    /// Every candidate timed by `cost`, without parts.
    fn timed(gs: &[Genome], cost: impl Fn(&Genome) -> f64) -> Vec<(Outcome, Parts)> {
        gs.iter()
            .map(|g| (Outcome::Time(cost(g)), Vec::new()))
            .collect()
    }

    fn run(params: &Params, seeds: &[Genome], target: &[usize]) -> Report {
        let genes = vec![8; target.len()];
        search(
            &genes,
            &[],
            params,
            seeds,
            &mut |gs, _| timed(gs, |g| cost(g, target)),
            &mut |_| {},
            &|| false,
        )
    }

    #[test]
    fn the_search_finds_a_separable_optimum_and_is_reproducible() {
        let target = [3, 7, 0, 5, 2, 6];
        let params = Params {
            population: 40,
            generations: 30,
            ..Params::default()
        };
        let a = run(&params, &[], &target);
        assert_eq!(a.best, Some((target.to_vec(), 1.0)));
        // No candidate measured twice.
        let mut gs: Vec<&Genome> = a.measured.iter().map(|(g, _)| g).collect();
        let n = gs.len();
        gs.sort();
        gs.dedup();
        assert_eq!(gs.len(), n);
        assert_eq!(
            run(&params, &[], &target),
            a,
            "the same seed, the same search"
        );
        let other = run(&Params { seed: 9, ..params }, &[], &target);
        assert_ne!(other.measured, a.measured, "another seed, another search");
    }

    #[test]
    fn the_composite_of_the_fastest_parts_is_measured_next() {
        // Two groups of two genes; each seed is optimal in one group only.
        let target = [3, 7, 0, 5];
        let groups = [0, 0, 1, 1];
        let seeds = [vec![3, 7, 1, 1], vec![1, 1, 0, 5]];
        let part = |g: &Genome, k: usize| {
            (0..4)
                .filter(|&i| groups[i] == k)
                .map(|i| g[i].abs_diff(target[i]) as f64)
                .sum::<f64>()
        };
        let params = Params {
            population: 4,
            generations: 2,
            elites: 1,
            ..Params::default()
        };
        let r = search(
            &[8; 4],
            &groups,
            &params,
            &seeds,
            &mut |gs, _| {
                gs.iter()
                    .map(|g| {
                        let parts = vec![Some(part(g, 0)), Some(part(g, 1))];
                        (Outcome::Time(cost(g, &target)), parts)
                    })
                    .collect()
            },
            &mut |_| {},
            &|| false,
        );
        // The second generation's first new candidate is the composite.
        assert_eq!(r.measured[4].0, target.to_vec(), "{:?}", r.measured);
        assert_eq!(r.best, Some((target.to_vec(), 1.0)));
    }

    #[test]
    fn a_seed_is_measured_first_and_the_best_never_gets_worse() {
        let target = [1, 1, 1, 1];
        let seed = vec![1, 1, 1, 2];
        let params = Params {
            population: 10,
            generations: 5,
            ..Params::default()
        };
        let mut bests = Vec::new();
        let genes = vec![8; 4];
        let r = search(
            &genes,
            &[],
            &params,
            std::slice::from_ref(&seed),
            &mut |gs, _| timed(gs, |g| cost(g, &target)),
            &mut |p| bests.push(p.best.expect("timed")),
            &|| false,
        );
        assert_eq!(r.measured[0], (seed, Outcome::Time(2.0)));
        assert!(bests.windows(2).all(|w| w[1] <= w[0]), "{bests:?}");
        assert!(r.best.expect("timed").1 <= 2.0);
    }

    #[test]
    fn failed_and_pruned_candidates_never_win_and_stop_is_obeyed() {
        // Every candidate with gene 0 at 0 (the optimum's) fails, and every
        // one with gene 1 at 0 is pruned.
        let target = [0, 0, 3];
        let genes = vec![4; 3];
        let params = Params {
            population: 20,
            generations: 10,
            ..Params::default()
        };
        let r = search(
            &genes,
            &[],
            &params,
            &[],
            &mut |gs, _| {
                gs.iter()
                    .map(|g| match g.as_slice() {
                        [0, ..] => Outcome::Failed("it crashed".to_string()),
                        [_, 0, _] => Outcome::Pruned,
                        _ => Outcome::Time(cost(g, &target)),
                    })
                    .map(|o| (o, Vec::new()))
                    .collect()
            },
            &mut |_| {},
            &|| false,
        );
        let (best, _) = r.best.expect("some candidate timed");
        assert!(best[0] != 0 && best[1] != 0, "{best:?}");
        assert!(r
            .measured
            .iter()
            .any(|(_, o)| matches!(o, Outcome::Failed(_))));
        let calls = std::cell::Cell::new(0);
        let r = search(
            &genes,
            &[],
            &params,
            &[],
            &mut |gs, _| timed(gs, |g| cost(g, &target)),
            &mut |_| {},
            &|| {
                calls.set(calls.get() + 1);
                calls.get() > 2
            },
        );
        assert_eq!(r.generations, 2);
    }

    #[test]
    fn tile_values_are_powers_of_two_and_ceil_divisions() {
        assert_eq!(tile_values(1), vec![1]);
        assert_eq!(tile_values(12), vec![1, 2, 3, 4, 6, 8, 12]);
        assert_eq!(
            tile_values(100),
            vec![1, 2, 4, 7, 8, 13, 16, 25, 32, 50, 64, 100]
        );
    }
}
