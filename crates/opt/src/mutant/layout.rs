//! The layout operators mutants are built of (PET §4.2's "reshape &
//! transpose"): a compound of moves of a factor of one axis into another,
//! swaps of two axes, and (on weights only) repeats along an axis, written
//! as one comprehension that reads each output element from its source.
//!
//! Requires shapes whose moved factors divide their axes ([`Layout::shape`]
//! checks). Guarantees: a compound's comprehension computes the composed
//! index map; [`inverse`] of a compound of moves and swaps undoes it, so
//! `inverse(l)(l(x)) = x` for every `x`.

/// One layout step on a tensor of some rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A factor `factor` of axis `from` moves into axis `to`, keeping the
    /// rank (`from` shrinks, `to` grows). `from_inner`: the factor taken
    /// is the inner one (an element `i` of `from` goes to part `i % f`,
    /// interleaved, as a dilation's taps are) rather than the outer one
    /// (part `i / (n / f)`, contiguous blocks, as a batch's images are).
    /// `to_inner`: the factor becomes the inner part of `to`.
    Move {
        from: usize,
        to: usize,
        factor: i64,
        from_inner: bool,
        to_inner: bool,
    },
    /// Axes `a` and `b` trade places.
    Swap { a: usize, b: usize },
    /// Axis `axis` repeats `times` times (whole copies, one after another).
    Tile { axis: usize, times: i64 },
}

impl Layout {
    /// The shape this step makes of `shape`, or `None` when it does not
    /// apply (an axis out of range, a factor that does not divide).
    pub fn shape(&self, shape: &[i64]) -> Option<Vec<i64>> {
        let rank = shape.len();
        let mut out = shape.to_vec();
        match *self {
            Layout::Move {
                from, to, factor, ..
            } => {
                if from >= rank || to >= rank || from == to || factor < 2 {
                    return None;
                }
                if shape[from] % factor != 0 {
                    return None;
                }
                out[from] = shape[from] / factor;
                out[to] = shape[to] * factor;
            }
            Layout::Swap { a, b } => {
                if a >= rank || b >= rank || a == b {
                    return None;
                }
                out.swap(a, b);
            }
            Layout::Tile { axis, times } => {
                if axis >= rank || times < 2 {
                    return None;
                }
                out[axis] = shape[axis] * times;
            }
        }
        Some(out)
    }

    /// The source subscripts of the element at `out` (index texts) of
    /// this step's result, when its argument has shape `shape`.
    fn source(&self, shape: &[i64], out: &[String]) -> Vec<String> {
        let mut src = out.to_vec();
        match *self {
            Layout::Move {
                from,
                to,
                factor: f,
                from_inner,
                to_inner,
            } => {
                let (n_to, rest) = (shape[to], shape[from] / f);
                let y = &out[to];
                let (part, j) = if to_inner {
                    (format!("({y}) % {f}"), format!("({y}) / {f}"))
                } else {
                    (format!("({y}) / {n_to}"), format!("({y}) % {n_to}"))
                };
                let r = &out[from];
                src[from] = match (from_inner, rest) {
                    (_, 1) => part,
                    (true, _) => format!("({r}) * {f} + {part}"),
                    (false, _) => format!("{part} * {rest} + ({r})"),
                };
                src[to] = if n_to == 1 { "0".to_string() } else { j };
            }
            Layout::Swap { a, b } => src.swap(a, b),
            Layout::Tile { axis, .. } => src[axis] = format!("({}) % {}", out[axis], shape[axis]),
        }
        src
    }

    /// The step in words, axes named by `axes` (by number past its end).
    pub fn describe(&self, axes: &[&str]) -> String {
        let name = |a: usize| {
            axes.get(a)
                .map_or_else(|| format!("axis {a}"), |n| n.to_string())
        };
        match self {
            Layout::Move {
                from,
                to,
                factor,
                from_inner,
                to_inner,
            } => format!(
                "{} {factor} of the {} into the {}{}",
                if *from_inner {
                    "interleaved"
                } else {
                    "blocks of"
                },
                name(*from),
                name(*to),
                if *to_inner { " (inner)" } else { "" }
            ),
            Layout::Swap { a, b } => format!("swap the {} and the {}", name(*a), name(*b)),
            Layout::Tile { axis, times } => format!("repeat the {} {times} times", name(*axis)),
        }
    }
}

/// The shape a compound `steps` makes of `shape`.
pub fn shape_after(steps: &[Layout], shape: &[i64]) -> Option<Vec<i64>> {
    steps.iter().try_fold(shape.to_vec(), |s, l| l.shape(&s))
}

/// The compound that undoes `steps` (all invertible), applied to their
/// result.
pub fn inverse(steps: &[Layout]) -> Option<Vec<Layout>> {
    steps
        .iter()
        .rev()
        .map(|l| match *l {
            Layout::Move {
                from,
                to,
                factor,
                from_inner,
                to_inner,
            } => Some(Layout::Move {
                from: to,
                to: from,
                factor,
                from_inner: to_inner,
                to_inner: from_inner,
            }),
            Layout::Swap { a, b } => Some(Layout::Swap { a, b }),
            Layout::Tile { .. } => None,
        })
        .collect()
}

/// The comprehension `out(i0, ...) = input(...)` computing compound
/// `steps` of `input` (of shape `shape`), or `None` when a step does not
/// apply.
pub fn comprehension(steps: &[Layout], input: &str, shape: &[i64], out: &str) -> Option<String> {
    // Shapes before each step, to map the final index back step by step.
    let mut shapes = vec![shape.to_vec()];
    for l in steps {
        shapes.push(l.shape(shapes.last()?)?);
    }
    let iters: Vec<String> = (0..shape.len()).map(|d| format!("i{d}")).collect();
    let mut index = iters.clone();
    for (l, s) in steps.iter().zip(&shapes).rev() {
        index = l.source(s, &index);
    }
    let final_shape = shapes.last()?;
    let ranges: Vec<String> = iters
        .iter()
        .zip(final_shape)
        .map(|(i, n)| format!("{i} in 0:{n}"))
        .collect();
    Some(format!(
        "{out}({}) = {input}({}) where {}",
        iters.join(", "),
        index.join(", "),
        ranges.join(", ")
    ))
}

/// A compound's description: its steps joined, axes named by `axes`.
pub fn describe(steps: &[Layout], axes: &[&str]) -> String {
    steps
        .iter()
        .map(|l| l.describe(axes))
        .collect::<Vec<_>>()
        .join(", ")
}
