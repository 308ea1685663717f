//! The tuning space of one kernel, as genes for the genetic search: drawn
//! from the options the cost models took (`runtime::options_taken`) and
//! the indices of the steps autotile saw.
//!
//! The genes of a step: a tile for each free index at each of two cache
//! levels (its whole range, or one of TC's tile values for it); vectors on
//! or off, where vectorize chose; the jam's points (none, the model's, half
//! or twice it), where it jammed; the parallel index or none, where
//! parallelize chose one; unrolling on or off, where unroll unrolled; the
//! runtime's partitions per thread (the model's, or 1, 2, 4, 8 or 16),
//! where it splits a step (a parallel one, a library matmul); fusing with
//! the next stage on or off, where fuse could join them.
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
    Vectorize {
        step: String,
    },
    Jam {
        step: String,
        index: String,
        values: Vec<Option<u64>>,
    },
    Parallel {
        step: String,
        index: String,
    },
    Unroll {
        step: String,
    },
    /// Fusing the step with the next stage: on first.
    Fuse {
        step: String,
    },
    /// Partitions per thread: the model's first.
    Partitions {
        step: String,
        values: Vec<u64>,
    },
}

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
        for (step, free) in indices {
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
        }
        for (step, s) in &taken.steps {
            if s.vectorize.is_some() {
                genes.push(Gene::Vectorize { step: step.clone() });
            }
            if let Some(Some((index, t))) = &s.jam {
                let mut values = vec![None, Some(*t), Some((t / 2).max(1)), Some(t * 2)];
                values.dedup();
                genes.push(Gene::Jam {
                    step: step.clone(),
                    index: index.clone(),
                    values,
                });
            }
            if let Some(Some(index)) = &s.parallel {
                genes.push(Gene::Parallel {
                    step: step.clone(),
                    index: index.clone(),
                });
            }
            if s.unroll == Some(true) {
                genes.push(Gene::Unroll { step: step.clone() });
            }
            if s.fuse.is_some() {
                genes.push(Gene::Fuse { step: step.clone() });
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

    /// How many values each gene has.
    pub fn sizes(&self) -> Vec<usize> {
        self.genes
            .iter()
            .map(|g| match g {
                Gene::Tile { values, .. } => values.len(),
                Gene::Jam { values, .. } => values.len(),
                Gene::Partitions { values, .. } => values.len(),
                Gene::Vectorize { .. }
                | Gene::Parallel { .. }
                | Gene::Unroll { .. }
                | Gene::Fuse { .. } => 2,
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
                Gene::Vectorize { step } => out.record(step, |s| s.vectorize = Some(v == 0)),
                Gene::Jam {
                    step,
                    index,
                    values,
                } => out.record(step, |s| {
                    s.jam = Some(values[v].map(|t| (index.clone(), t)));
                }),
                Gene::Parallel { step, index } => out.record(step, |s| {
                    s.parallel = Some((v == 0).then(|| index.clone()));
                }),
                Gene::Unroll { step } => out.record(step, |s| s.unroll = Some(v == 0)),
                Gene::Fuse { step } => out.record(step, |s| s.fuse = Some(v == 0)),
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
                Gene::Vectorize { step } => {
                    usize::from(options.step(step).vectorize == Some(false))
                }
                Gene::Jam { step, values, .. } => {
                    let want = options.step(step).jam.flatten().map(|(_, t)| t);
                    values.iter().position(|v| *v == want).unwrap_or(0)
                }
                Gene::Parallel { step, .. } => {
                    usize::from(options.step(step).parallel == Some(None))
                }
                Gene::Unroll { step } => usize::from(options.step(step).unroll == Some(false)),
                Gene::Fuse { step } => usize::from(options.step(step).fuse == Some(false)),
                Gene::Partitions { step, values } => options
                    .step(step)
                    .partitions
                    .and_then(|n| values.iter().position(|&v| v == n))
                    .unwrap_or(0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken() -> (Options, StepIndices) {
        let options = kernel::parse_options(
            "step s1\n  tile i=4\n  vectorize on\n  jam i=8\nstep s1_vec\n  parallel i\n  partitions 4\n",
        )
        .expect("parses");
        let indices: StepIndices = [(
            "s1".to_string(),
            vec![
                ("i".to_string(), 12),
                ("j".to_string(), 1),
                ("k".to_string(), 3),
            ],
        )]
        .into();
        (options, indices)
    }

    #[test]
    fn genes_follow_the_choices_taken_and_the_indices_seen() {
        let (options, indices) = taken();
        let space = Space::new(&options, &indices);
        // Tiles of `i` (12: whole, then 1 2 3 4 6 8) and `k` (3: whole,
        // then 1 2) at two levels (`j` has one value); vectorize; the jam
        // (none, 8, 4, 16); the parallel index; its partitions (4, then
        // 1 2 8 16).
        assert_eq!(space.sizes(), vec![7, 3, 7, 3, 2, 4, 2, 5]);
        // The default's genome decodes to the options taken.
        let g = space.encode(&options);
        assert_eq!(g, vec![4, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(space.decode(&g), options);
        // Another genome: `i` by 2 then `k` by 1, no vectors, no jam, no
        // parallel index, 2 partitions per thread.
        let other = space.decode(&vec![2, 0, 0, 1, 1, 0, 1, 2]);
        assert_eq!(
            kernel::print_options(&other),
            "step s1\n  tile i=2\n  tile k=1\n  vectorize off\n  jam none\nstep s1_vec\n  parallel none\n  partitions 2\n"
        );
        // Every tile gene at its first value: untiled.
        let whole = space.decode(&vec![0; 8]);
        assert_eq!(whole.step("s1").tiles, Some(Vec::new()));
    }
}
