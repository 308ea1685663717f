//! The tuning space of one kernel, as genes for the genetic search: drawn
//! from the options the cost models took (`runtime::options_taken`) and
//! the indices of the steps autotile saw.
//!
//! The genes of a step: a tile for each free index at each of two cache
//! levels (its whole range, or one of TC's tile values for it); the order
//! of its loops (as the passes found them, or one index of a block of its
//! nest moved innermost or outermost in that block); vectors on or off,
//! and their width (the target's, 8 or 4 lanes), where vectorize chose;
//! the register block's jammed index and points (none, the model's, half
//! or twice its points, or another index of the step), where it jammed; the parallel index or none, where
//! parallelize chose one; the most points of a block unrolled (the
//! model's, none, 4, 8 or 16), where unroll unrolled; the
//! runtime's partitions per thread (the model's, or 1, 2, 4, 8 or 16),
//! where it splits a step (a parallel one, a library matmul); fusing with
//! the next stage on or off, where fuse could join them; a layout copy
//! kept or forwarded to its readers (kept first), where forward could
//! remove it.
//! [`Space::decode`] turns a genome into kernel options, and
//! [`Space::encode`] the options taken into the genome of generation
//! zero's first seed.

use kernel::{Options, StepIndices};

use super::genetic::{tile_values, Genome};

/// The cache levels autotile tiles for.
const LEVELS: usize = 2;

#[derive(Clone, Debug, PartialEq)]
enum Gene {
    /// A tile of `index` at `level`: its whole range first.
    Tile {
        step: String,
        level: usize,
        index: String,
        values: Vec<u64>,
    },
    /// The loops' order: as found first.
    Order {
        step: String,
        values: Vec<Option<Vec<String>>>,
    },
    Vectorize {
        step: String,
    },
    /// The vectors' lanes: the target's first.
    Width {
        step: String,
    },
    /// The register block: the jammed indices and their points, outermost
    /// first; none first.
    Jam {
        step: String,
        values: Vec<Vec<(String, u64)>>,
    },
    Parallel {
        step: String,
        index: String,
    },
    /// The most points of a block unrolled: the model's first.
    Unroll {
        step: String,
        values: Vec<u64>,
    },
    /// Fusing the step with the next stage: on first.
    Fuse {
        step: String,
    },
    /// Forwarding the step's copy to its readers: off first.
    Forward {
        step: String,
    },
    /// Partitions per thread: the model's first.
    Partitions {
        step: String,
        values: Vec<u64>,
    },
}

impl Gene {
    /// The step whose choice the gene is.
    fn step(&self) -> &str {
        match self {
            Gene::Tile { step, .. }
            | Gene::Order { step, .. }
            | Gene::Vectorize { step }
            | Gene::Width { step }
            | Gene::Jam { step, .. }
            | Gene::Parallel { step, .. }
            | Gene::Unroll { step, .. }
            | Gene::Fuse { step }
            | Gene::Forward { step }
            | Gene::Partitions { step, .. } => step,
        }
    }
}

/// The narrower vector widths a search draws, in lanes.
const WIDTHS: [Option<u64>; 3] = [None, Some(8), Some(4)];

/// The most points of a block unrolled a search draws besides the
/// model's: none, 4, 8 and 16 (unroll's default).
const UNROLLS: [u64; 4] = [0, 4, 8, 16];

/// The partitions per thread a search draws besides the model's.
const PARTITIONS: [u64; 5] = [1, 2, 4, 8, 16];

/// The genes of one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    genes: Vec<Gene>,
}

impl Space {
    /// The space around the options `taken`, with the steps' `indices`.
    pub fn new(taken: &Options, indices: &StepIndices) -> Space {
        let mut genes = Vec::new();
        for (step, nest) in indices {
            let free = nest.first().map_or(&[][..], Vec::as_slice);
            for level in 0..LEVELS {
                for (index, range) in free.iter().filter(|(_, r)| *r > 1) {
                    let mut values = vec![*range];
                    values.extend(tile_values(*range).into_iter().filter(|v| v < range));
                    genes.push(Gene::Tile {
                        step: step.clone(),
                        level,
                        index: index.clone(),
                        values,
                    });
                }
            }
            let values = orders(nest);
            if values.len() > 1 {
                genes.push(Gene::Order {
                    step: step.clone(),
                    values,
                });
            }
        }
        for (step, s) in &taken.steps {
            if s.vectorize.is_some() {
                genes.push(Gene::Vectorize { step: step.clone() });
            }
            if s.vectorize == Some(true) {
                genes.push(Gene::Width { step: step.clone() });
            }
            if let Some([(index, t)]) = s.jam.as_deref() {
                let own = indices.get(step).and_then(|n| n.first());
                genes.push(Gene::Jam {
                    step: step.clone(),
                    values: register_blocks(index, *t, own.map_or(&[][..], Vec::as_slice)),
                });
            }
            if let Some(Some(index)) = &s.parallel {
                genes.push(Gene::Parallel {
                    step: step.clone(),
                    index: index.clone(),
                });
            }
            if let Some(n) = s.unroll.filter(|&n| n > 0) {
                let mut values = vec![n];
                values.extend(UNROLLS.iter().filter(|&&u| u != n));
                genes.push(Gene::Unroll {
                    step: step.clone(),
                    values,
                });
            }
            if s.fuse.is_some() {
                genes.push(Gene::Fuse { step: step.clone() });
            }
            if s.forward.is_some() {
                genes.push(Gene::Forward { step: step.clone() });
            }
            if let Some(n) = s.partitions {
                let mut values = vec![n];
                values.extend(PARTITIONS.iter().filter(|&&p| p != n));
                genes.push(Gene::Partitions {
                    step: step.clone(),
                    values,
                });
            }
        }
        Space { genes }
    }

    /// The stage of each gene's step (`s3` of `s3_O_vec`: the kernel's
    /// third statement, whatever the passes made of it), by which a
    /// search composes the fastest parts of its candidates.
    pub fn stages(&self) -> Vec<String> {
        self.genes
            .iter()
            .map(|g| stage(g.step()).to_string())
            .collect()
    }

    /// The genomes one gene away from `genome`, for the genes of the
    /// steps in `stages` other than tiles (a single tile rarely matters
    /// alone, and there are many): each such gene's next value first,
    /// then each one's value after it, so that a few of them cover every
    /// gene once.
    pub fn neighbours(&self, genome: &Genome, stages: &[&str]) -> Vec<Genome> {
        let sizes = self.sizes();
        let genes: Vec<usize> = (0..self.genes.len())
            .filter(|&k| {
                !matches!(self.genes[k], Gene::Tile { .. })
                    && stages.contains(&stage(self.genes[k].step()))
            })
            .collect();
        let most = genes.iter().map(|&k| sizes[k]).max().unwrap_or(0);
        let mut out = Vec::new();
        for offset in 1..most {
            for &k in genes.iter().filter(|&&k| offset < sizes[k]) {
                let mut g = genome.clone();
                g[k] = (g[k] + offset) % sizes[k];
                out.push(g);
            }
        }
        out
    }

    /// How many values each gene has.
    pub fn sizes(&self) -> Vec<usize> {
        self.genes
            .iter()
            .map(|g| match g {
                Gene::Tile { values, .. } => values.len(),
                Gene::Order { values, .. } => values.len(),
                Gene::Width { .. } => WIDTHS.len(),
                Gene::Jam { values, .. } => values.len(),
                Gene::Partitions { values, .. } => values.len(),
                Gene::Unroll { values, .. } => values.len(),
                Gene::Vectorize { .. }
                | Gene::Parallel { .. }
                | Gene::Fuse { .. }
                | Gene::Forward { .. } => 2,
            })
            .collect()
    }

    /// The options genome `g` stands for.
    pub fn decode(&self, g: &Genome) -> Options {
        let mut out = Options::default();
        let mut tiles: std::collections::BTreeMap<String, Vec<Vec<(String, u64)>>> =
            std::collections::BTreeMap::new();
        for (gene, &v) in self.genes.iter().zip(g) {
            match gene {
                Gene::Tile {
                    step,
                    level,
                    index,
                    values,
                } => {
                    let levels = tiles
                        .entry(step.clone())
                        .or_insert_with(|| vec![Vec::new(); LEVELS]);
                    if v > 0 {
                        levels[*level].push((index.clone(), values[v]));
                    }
                }
                Gene::Order { step, values } => {
                    if let Some(order) = &values[v] {
                        out.record(step, |s| s.order = Some(order.clone()));
                    }
                }
                Gene::Vectorize { step } => out.record(step, |s| s.vectorize = Some(v == 0)),
                Gene::Width { step } => {
                    if let Some(w) = WIDTHS[v] {
                        out.record(step, |s| s.width = Some(w));
                    }
                }
                Gene::Jam { step, values } => out.record(step, |s| s.jam = Some(values[v].clone())),
                Gene::Parallel { step, index } => out.record(step, |s| {
                    s.parallel = Some((v == 0).then(|| index.clone()));
                }),
                Gene::Unroll { step, values } => out.record(step, |s| s.unroll = Some(values[v])),
                Gene::Fuse { step } => out.record(step, |s| s.fuse = Some(v == 0)),
                Gene::Forward { step } => out.record(step, |s| s.forward = Some(v == 1)),
                Gene::Partitions { step, values } => {
                    out.record(step, |s| s.partitions = Some(values[v]));
                }
            }
        }
        for (step, levels) in tiles {
            let levels: Vec<Vec<(String, u64)>> =
                levels.into_iter().filter(|l| !l.is_empty()).collect();
            out.record(&step, |s| s.tiles = Some(levels));
        }
        // A width means nothing without vectors.
        for s in out.steps.values_mut() {
            if s.vectorize == Some(false) {
                s.width = None;
            }
        }
        out
    }

    /// The genome nearest to `options`: each gene at the value the options
    /// give (the nearest tile), else its first.
    pub fn encode(&self, options: &Options) -> Genome {
        self.genes
            .iter()
            .map(|gene| match gene {
                Gene::Tile {
                    step,
                    level,
                    index,
                    values,
                } => {
                    let levels = options.step(step).tiles.unwrap_or_default();
                    let tile = levels
                        .get(*level)
                        .and_then(|l| l.iter().find(|(i, _)| i == index))
                        .map(|(_, t)| *t);
                    match tile {
                        None => 0,
                        Some(t) => (1..values.len())
                            .min_by_key(|&k| values[k].abs_diff(t))
                            .unwrap_or(0),
                    }
                }
                Gene::Order { step, values } => {
                    let want = options.step(step).order;
                    values.iter().position(|v| *v == want).unwrap_or(0)
                }
                Gene::Vectorize { step } => {
                    usize::from(options.step(step).vectorize == Some(false))
                }
                Gene::Width { step } => {
                    let want = options.step(step).width;
                    WIDTHS.iter().position(|w| *w == want).unwrap_or(0)
                }
                Gene::Jam { step, values } => {
                    let want = options.step(step).jam.unwrap_or_default();
                    values.iter().position(|v| *v == want).unwrap_or(0)
                }
                Gene::Parallel { step, .. } => {
                    usize::from(options.step(step).parallel == Some(None))
                }
                Gene::Unroll { step, values } => options
                    .step(step)
                    .unroll
                    .and_then(|n| values.iter().position(|&v| v == n))
                    .unwrap_or(0),
                Gene::Fuse { step } => usize::from(options.step(step).fuse == Some(false)),
                Gene::Forward { step } => usize::from(options.step(step).forward == Some(true)),
                Gene::Partitions { step, values } => options
                    .step(step)
                    .partitions
                    .and_then(|n| values.iter().position(|&v| v == n))
                    .unwrap_or(0),
            })
            .collect()
    }
}

/// The most points of a register block a search draws: AVX-512's 32
/// vector registers less a loaded vector, a broadcast and a spare (the C
/// backend keeps at most 30 accumulators in registers).
const MOST_POINTS: u64 = 28;

/// The register blocks a search draws for a step whose model jammed
/// `index` by `points`, with free indices `own` (and their ranges): none;
/// the model's; half or twice its points; as many points along another
/// index instead (at most its range); and two or four of another index's
/// points around the model's (rows of columns, or output-channel blocks of
/// columns), within [`MOST_POINTS`].
fn register_blocks(index: &str, points: u64, own: &[(String, u64)]) -> Vec<Vec<(String, u64)>> {
    let others = || own.iter().filter(|(i, r)| i != index && *r > 1);
    let model = |p: u64| (index.to_string(), p);
    let mut out: Vec<Vec<(String, u64)>> = vec![Vec::new()];
    let mut add = |v: Vec<(String, u64)>| {
        if !out.contains(&v) {
            out.push(v);
        }
    };
    for p in [points, (points / 2).max(1), points * 2] {
        add(vec![model(p)]);
    }
    for (i, r) in others() {
        add(vec![(i.clone(), points.min(*r))]);
    }
    for (i, r) in others() {
        for p in [2, 4]
            .into_iter()
            .filter(|p| p <= r && p * points <= MOST_POINTS)
        {
            add(vec![(i.clone(), p), model(points)]);
        }
    }
    out
}

/// The stage a step belongs to: the `sN` its name starts with (lowering
/// names the steps of statement N so, and the passes keep the prefix), or
/// the whole name.
pub fn stage(step: &str) -> &str {
    let digits = step
        .strip_prefix('s')
        .map_or(0, |r| r.chars().take_while(char::is_ascii_digit).count());
    match step.get(1 + digits..) {
        Some(rest) if digits > 0 && (rest.is_empty() || rest.starts_with('_')) => {
            &step[..1 + digits]
        }
        _ => step,
    }
}

/// The loop orders of a step with `nest` (each block's free indices) a
/// search draws: as found (`None`), then, in each block with two loops or
/// more, each loop moved innermost and outermost in it (named by the
/// block's indices alone: the other blocks keep their order).
fn orders(nest: &[Vec<(String, u64)>]) -> Vec<Option<Vec<String>>> {
    let mut out = vec![None];
    for block in nest {
        let names: Vec<&String> = block
            .iter()
            .filter(|(_, r)| *r > 1)
            .map(|(i, _)| i)
            .collect();
        if names.len() < 2 {
            continue;
        }
        for (k, moved) in names.iter().enumerate() {
            let rest = names
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(_, n)| (*n).clone());
            let last: Vec<String> = rest.clone().chain([(*moved).clone()]).collect();
            let first: Vec<String> = [(*moved).clone()].into_iter().chain(rest).collect();
            for order in [last, first] {
                let as_found = order.iter().zip(&names).all(|(a, b)| a == *b);
                if !as_found && !out.contains(&Some(order.clone())) {
                    out.push(Some(order));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken() -> (Options, StepIndices) {
        let options = kernel::parse_options(
            "step s1\n  tile i=4\n  vectorize on\n  jam i=8\nstep s1_vec\n  parallel i\n  unroll on\n  partitions 4\n",
        )
        .expect("parses");
        let indices: StepIndices = [(
            "s1".to_string(),
            vec![vec![
                ("i".to_string(), 12),
                ("j".to_string(), 1),
                ("k".to_string(), 3),
            ]],
        )]
        .into();
        (options, indices)
    }

    #[test]
    fn a_step_belongs_to_the_stage_its_name_starts_with() {
        assert_eq!(stage("s3_O_vec"), "s3");
        assert_eq!(stage("s12_masks_1_vec"), "s12");
        assert_eq!(stage("s2"), "s2");
        assert_eq!(stage("sum_1"), "sum_1");
        assert_eq!(stage("s_x"), "s_x");
        assert_eq!(stage("s1x_y"), "s1x_y");
    }

    #[test]
    fn orders_move_each_loop_innermost_and_outermost_in_its_block() {
        let block = |names: &[&str]| names.iter().map(|n| (n.to_string(), 4)).collect::<Vec<_>>();
        let got = orders(&[block(&["n", "f"]), block(&["c", "kh", "kw"])]);
        let want: Vec<Option<Vec<String>>> = [
            None,
            Some(vec!["f", "n"]),
            Some(vec!["kh", "kw", "c"]),
            Some(vec!["c", "kw", "kh"]),
            Some(vec!["kh", "c", "kw"]),
            Some(vec!["kw", "c", "kh"]),
        ]
        .into_iter()
        .map(|o| o.map(|o| o.into_iter().map(String::from).collect()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn genes_follow_the_choices_taken_and_the_indices_seen() {
        let (options, indices) = taken();
        let space = Space::new(&options, &indices);
        // Tiles of `i` (12: whole, then 1 2 3 4 6 8) and `k` (3: whole,
        // then 1 2) at two levels (`j` has one value); the loops' order (as
        // found, or `k` before `i`); vectorize; the width (the target's, 8,
        // 4); the jam (none, i=8, i=4, i=16, k=3: `k` has 3 points, then
        // k=2 by i=8); the parallel index; the most points unrolled (16,
        // then 0 4 8); its partitions (4, then 1 2 8 16).
        assert_eq!(space.sizes(), vec![7, 3, 7, 3, 2, 2, 3, 6, 2, 4, 5]);
        // The default's genome decodes to the options taken.
        let g = space.encode(&options);
        assert_eq!(g, vec![4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(space.decode(&g), options);
        // Another genome: `i` by 2 then `k` by 1, `k` outermost, 8 lanes,
        // no jam, no parallel index, blocks of 4 points unrolled, 2
        // partitions per thread.
        let other = space.decode(&vec![2, 0, 0, 1, 1, 0, 1, 0, 1, 2, 2]);
        assert_eq!(
            kernel::print_options(&other),
            "step s1\n  tile i=2\n  tile k=1\n  order k i\n  vectorize on\n  width 8\n  jam none\nstep s1_vec\n  parallel none\n  unroll 4\n  partitions 2\n"
        );
        assert_eq!(space.encode(&other), vec![2, 0, 0, 1, 1, 0, 1, 0, 1, 2, 2]);
        // The register block along `k` instead.
        let along_k = space.decode(&vec![4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0]);
        assert_eq!(along_k.step("s1").jam, Some(vec![("k".to_string(), 3)]));
        // Two rows of `k` by the model's 8 of `i`.
        let block = space.decode(&vec![4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(
            block.step("s1").jam,
            Some(vec![("k".to_string(), 2), ("i".to_string(), 8)])
        );
        // Without vectors, the width gene says nothing.
        let scalar = space.decode(&vec![2, 0, 0, 1, 1, 1, 1, 0, 1, 0, 2]);
        assert_eq!(scalar.step("s1").vectorize, Some(false));
        assert_eq!(scalar.step("s1").width, None);
        // Every tile gene at its first value: untiled.
        let whole = space.decode(&vec![0; 11]);
        assert_eq!(whole.step("s1").tiles, Some(Vec::new()));
    }

    #[test]
    fn neighbours_change_one_gene_of_the_stages_given_each_gene_in_turn() {
        let options = kernel::parse_options(
            "step s1_X\n  forward off\nstep s2_O\n  tile i=4\n  vectorize on\nstep s2_O_vec\n  unroll on\n",
        )
        .expect("parses");
        let indices: StepIndices = [("s2_O".to_string(), vec![vec![("i".to_string(), 8)]])].into();
        let space = Space::new(&options, &indices);
        // Tiles of `i` at two levels (8: whole, then 1 2 4), forward (2
        // values), vectorize (2), its width (3), unroll (16, then 0 4 8).
        assert_eq!(space.sizes(), vec![4, 4, 2, 2, 3, 4]);
        let default = space.encode(&options);
        assert_eq!(default, vec![3, 0, 0, 0, 0, 0]);
        // The second stage's genes but its tiles: each one's next value,
        // then the values after it; the first stage's gene untouched.
        assert_eq!(
            space.neighbours(&default, &["s2"]),
            vec![
                vec![3, 0, 0, 1, 0, 0],
                vec![3, 0, 0, 0, 1, 0],
                vec![3, 0, 0, 0, 0, 1],
                vec![3, 0, 0, 0, 2, 0],
                vec![3, 0, 0, 0, 0, 2],
                vec![3, 0, 0, 0, 0, 3],
            ]
        );
        assert_eq!(
            space.neighbours(&default, &["s1", "s2"])[0],
            vec![3, 0, 1, 0, 0, 0]
        );
    }

    #[test]
    fn a_copy_is_kept_first_and_forwarded_second() {
        let options = kernel::parse_options("step s1_Xb\n  forward off\n").expect("parses");
        let space = Space::new(&options, &StepIndices::new());
        assert_eq!(space.sizes(), vec![2]);
        assert_eq!(space.encode(&options), vec![0]);
        assert_eq!(space.decode(&vec![0]), options);
        let forwarded = space.decode(&vec![1]);
        assert_eq!(forwarded.step("s1_Xb").forward, Some(true));
        assert_eq!(space.encode(&forwarded), vec![1]);
    }
}
