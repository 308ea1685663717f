//! Random defs made of calls of prelude operators (`ops/prelude.tc`): the
//! form the optimizer's e-graph takes and its rewrite rules
//! (`ops/rewrites.rules`) fire on, as ONNX import writes it.
//!
//! A program has a theme (dense layers, convolutions, batched products, or
//! all of them mixed) that weights the operators it calls: matrix products
//! with transposed operands, Gemms, sums, differences and products,
//! activations, row biases and scalar scales, concatenations, slices,
//! reshapes (and reshapes back), inference batch norms; convolutions (with
//! and without a bias, strided, padded, dilated, two groups), per-channel
//! scales and biases (broadcast or `c11`), pooling and zero padding;
//! batched products and batches of products by one matrix. Some draws
//! write the left sides the rules rewrite: chains of two products, sums
//! of products sharing an operand, pairs of convolutions of one window
//! sharing their input or filters, a convolution followed by a scale, a
//! bias or a batch norm, an operator twice. Operands are earlier results (most often one no statement reads yet, so chains form)
//! or earlier inputs, so that operators share operands as the rules'
//! merges want, or fresh inputs. Every result no later statement reads is
//! an output.
//!
//! Dimensions are drawn from a few values in 1 to 6 shared by the program.
//! About half the programs declare them as size symbols (`D0`, `D1`, ...),
//! the others as literals; a dimension an operator computes (a
//! concatenation's `P + Q`, a convolution's output) is a literal in the
//! second kind and an expression in the first, which a new input cannot
//! declare, so there an operator needing such an operand uses an earlier
//! tensor of the same expression or is not drawn. Integer attributes are
//! literals, as ONNX import writes them (with [`Options::symbol_scalars`],
//! a reshape's size equal to a dimension is its size symbol instead).
//! Batch-norm variances are squares (`mul_r1(V, V)`), so
//! no square root of a negative number makes NaN.
//!
//! Guarantees: every program checks after the prelude and runs on the
//! interpreter on inputs of the shapes [`Calls::inputs`] gives (tested
//! below). Statements are drawn one operator at a time from the seed's
//! stream alone, so the program of `n` statements is the start of the one
//! of more (a failing case shrinks by its statement count).

use std::collections::BTreeMap;

use crate::Rng;

/// A generated def of prelude operator calls.
#[derive(Clone, Debug)]
pub struct Calls {
    /// The def's name (`f`).
    pub name: String,
    /// The def's TC text, to be checked after the prelude.
    pub source: String,
    /// The input tensors in parameter order, with their shapes at `sizes`.
    pub inputs: Vec<(String, Vec<usize>)>,
    /// The value of every size symbol of the def (none when its
    /// dimensions are literals).
    pub sizes: BTreeMap<String, i64>,
    /// The operators called, in statement order.
    pub ops: Vec<&'static str>,
    /// The theme the operators were drawn by.
    pub theme: &'static str,
}

/// What [`calls`] draws.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// At least this many statements (a draw may write up to four, so a
    /// few more).
    pub statements: usize,
    /// How often, in percent, a program's dimensions are size symbols
    /// rather than literals.
    pub symbolic: u64,
    /// Whether a reshape's size equal to a dimension declared as a size
    /// symbol is written as that symbol (`reshape_r1_r2(T, D0, D1)`, which
    /// the checker writes `int32(D0)`) rather than as its value.
    pub symbol_scalars: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            statements: 4,
            symbolic: 50,
            symbol_scalars: false,
        }
    }
}

/// A def of `options.statements` (or a few more) calls of prelude
/// operators, drawn from `rng`.
pub fn calls(rng: &mut Rng, options: &Options) -> Calls {
    let (theme, table) = rng.pick(THEMES);
    let symbolic = rng.chance(options.symbolic);
    let mut pool = Vec::new();
    // Four dimensions, one of them large enough for a convolution's window
    // and one small as a batch is (as size symbols, two of one value are
    // still two dimensions).
    let values = [
        rng.range(1, 6),
        rng.range(1, 6),
        rng.range(4, 6),
        rng.range(1, 3),
    ];
    for (k, &n) in values.iter().enumerate() {
        pool.push(if symbolic {
            Dim {
                n,
                e: format!("D{k}"),
            }
        } else {
            Dim::lit(n)
        });
    }
    let mut b = Builder {
        rng,
        symbol_scalars: options.symbol_scalars,
        pool,
        s: State::default(),
    };
    let total: u64 = table.iter().map(|(_, w)| u64::from(*w)).sum();
    // Operators that cannot be drawn over the tensors there are (their
    // operands' dimensions being expressions) are drawn again; a bounded
    // number of times, so a program always ends.
    for _ in 0..200 {
        if b.s.stmts.len() >= options.statements {
            break;
        }
        let mut draw = b.rng.range(0, total as i64 - 1) as u64;
        let op = table
            .iter()
            .find(|(_, w)| {
                let hit = draw < u64::from(*w);
                draw = draw.saturating_sub(u64::from(*w));
                hit
            })
            .map(|(op, _)| *op)
            .unwrap_or(table[0].0);
        let saved = b.s.clone();
        if op(&mut b).is_none() {
            b.s = saved;
        }
    }
    b.finish(theme)
}

/// A dimension: its value, and how the def's text writes it (a size
/// symbol, a literal, or an expression over them).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dim {
    n: i64,
    e: String,
}

impl Dim {
    fn lit(n: i64) -> Dim {
        Dim {
            n,
            e: n.to_string(),
        }
    }

    fn is_lit(&self) -> bool {
        self.e.bytes().all(|c| c.is_ascii_digit())
    }

    /// Whether an input's signature can declare it: a size symbol or a
    /// literal, not an expression.
    fn declarable(&self) -> bool {
        self.e.bytes().all(|c| c.is_ascii_alphanumeric())
    }

    /// A dimension computed from `from`: a literal when they all are (the
    /// checker computes it then), else the expression `e`. Two tensors'
    /// dimensions are taken as equal only when their texts are: equal texts
    /// come from one operator on the same dimensions, which the checker
    /// finds equal too; texts that differ may still be equal to it, and are
    /// kept apart all the same.
    fn derived(n: i64, e: String, from: &[&Dim]) -> Dim {
        if from.iter().all(|d| d.is_lit()) {
            Dim::lit(n)
        } else {
            Dim { n, e }
        }
    }

    fn sum(a: &Dim, b: &Dim) -> Dim {
        Dim::derived(a.n + b.n, format!("({} + {})", a.e, b.e), &[a, b])
    }

    fn max(a: &Dim, b: &Dim) -> Dim {
        Dim::derived(a.n.max(b.n), format!("max({}, {})", a.e, b.e), &[a, b])
    }
}

/// A tensor of the def: an input or a statement's result.
#[derive(Clone, Debug)]
struct Tensor {
    name: String,
    dims: Vec<Dim>,
    input: bool,
    /// How many statements read it.
    reads: usize,
}

/// The def drawn so far (restored when an operator cannot be drawn).
#[derive(Clone, Debug, Default)]
struct State {
    tensors: Vec<Tensor>,
    stmts: Vec<String>,
    ops: Vec<&'static str>,
    inputs: usize,
    results: usize,
}

/// An argument of a call.
enum Arg {
    T(usize),
    Int(i64),
    Float(&'static str),
    /// An integer attribute equal to a dimension: the dimension's symbol
    /// when it is one (and symbols are drawn as attributes), else its
    /// value.
    Size(Dim),
}

/// An operator: draws its operands and attributes and writes its
/// statements, or `None` when it cannot be drawn over the tensors there
/// are.
type Op = fn(&mut Builder) -> Option<()>;

struct Builder<'r> {
    rng: &'r mut Rng,
    symbol_scalars: bool,
    pool: Vec<Dim>,
    s: State,
}

impl Builder<'_> {
    /// A dimension for a new input's axis `axis` of `rank`: one of the
    /// program's, the large ones for an image's height and width.
    fn fresh(&mut self, rank: usize, axis: usize) -> Dim {
        if rank == 4 && axis >= 2 && self.rng.chance(80) {
            let large: Vec<Dim> = self.pool.iter().filter(|d| d.n >= 3).cloned().collect();
            if !large.is_empty() {
                return self.rng.pick(&large);
            }
        }
        self.rng.pick(&self.pool)
    }

    /// An operator's first operand, of rank `rank`: most often a result no
    /// statement reads yet (so that statements chain), else as
    /// [`Builder::operand`].
    fn main(&mut self, rank: usize) -> Option<usize> {
        let unread: Vec<usize> = (0..self.s.tensors.len())
            .filter(|&k| {
                let t = &self.s.tensors[k];
                !t.input && t.reads == 0 && t.dims.len() == rank
            })
            .collect();
        if !unread.is_empty() && self.rng.chance(80) {
            return Some(self.rng.pick(&unread));
        }
        self.operand(&vec![None; rank])
    }

    /// A tensor of rank `want.len()` whose dimension `k` is `want[k]` where
    /// given: an earlier tensor (a result no statement reads yet, or any,
    /// so that operators share operands), or a new input; `None` when no
    /// earlier tensor fits and an input cannot declare the dimensions.
    fn operand(&mut self, want: &[Option<Dim>]) -> Option<usize> {
        let fits: Vec<usize> = (0..self.s.tensors.len())
            .filter(|&k| {
                let t = &self.s.tensors[k];
                t.dims.len() == want.len()
                    && t.dims
                        .iter()
                        .zip(want)
                        .all(|(d, w)| w.as_ref().is_none_or(|w| w == d))
            })
            .collect();
        let can_declare = want.iter().flatten().all(Dim::declarable);
        if !fits.is_empty() && (!can_declare || self.rng.chance(50)) {
            let unread: Vec<usize> = fits
                .iter()
                .copied()
                .filter(|&k| !self.s.tensors[k].input && self.s.tensors[k].reads == 0)
                .collect();
            return Some(if !unread.is_empty() && self.rng.chance(60) {
                self.rng.pick(&unread)
            } else {
                self.rng.pick(&fits)
            });
        }
        if !can_declare {
            return None;
        }
        let rank = want.len();
        let dims = (0..rank)
            .map(|k| want[k].clone().unwrap_or_else(|| self.fresh(rank, k)))
            .collect();
        Some(self.input(dims))
    }

    fn input(&mut self, dims: Vec<Dim>) -> usize {
        let name = format!("X{}", self.s.inputs);
        self.s.inputs += 1;
        self.s.tensors.push(Tensor {
            name,
            dims,
            input: true,
            reads: 0,
        });
        self.s.tensors.len() - 1
    }

    fn dims(&self, t: usize) -> Vec<Dim> {
        self.s.tensors[t].dims.clone()
    }

    /// Writes `result = op(args)` with a result of dimensions `dims`.
    fn call(&mut self, op: &'static str, args: Vec<Arg>, dims: Vec<Dim>) -> usize {
        let mut text = Vec::new();
        for a in args {
            text.push(match a {
                Arg::T(k) => {
                    self.s.tensors[k].reads += 1;
                    self.s.tensors[k].name.clone()
                }
                Arg::Int(v) => v.to_string(),
                Arg::Float(v) => v.to_string(),
                Arg::Size(d) => self.size_text(&d),
            });
        }
        let name = format!("T{}", self.s.results);
        self.s.results += 1;
        self.s
            .stmts
            .push(format!("  {name} = {op}({})", text.join(", ")));
        self.s.ops.push(op);
        self.s.tensors.push(Tensor {
            name,
            dims,
            input: false,
            reads: 0,
        });
        self.s.tensors.len() - 1
    }

    /// How an integer attribute equal to `d` is written.
    fn size_text(&self, d: &Dim) -> String {
        if self.symbol_scalars && d.declarable() {
            d.e.clone()
        } else {
            d.n.to_string()
        }
    }

    /// The dimension a result gets from an attribute equal to `d`.
    fn size_dim(&self, d: &Dim) -> Dim {
        if self.symbol_scalars && d.declarable() {
            d.clone()
        } else {
            Dim::lit(d.n)
        }
    }

    /// A vector of `c` elements that are squares, for a variance.
    fn variance(&mut self, c: &Dim) -> Option<usize> {
        let v = self.operand(&[Some(c.clone())])?;
        Some(self.call("mul_r1", vec![Arg::T(v), Arg::T(v)], vec![c.clone()]))
    }

    /// The def's text, inputs and sizes.
    fn finish(self, theme: &'static str) -> Calls {
        let mut params = Vec::new();
        let mut inputs = Vec::new();
        let mut sizes = BTreeMap::new();
        let mut outputs = Vec::new();
        for t in &self.s.tensors {
            if t.input {
                let dims: Vec<String> = t.dims.iter().map(|d| d.e.clone()).collect();
                params.push(format!("float({}) {}", dims.join(", "), t.name));
                inputs.push((
                    t.name.clone(),
                    t.dims.iter().map(|d| d.n as usize).collect(),
                ));
                for d in t.dims.iter().filter(|d| !d.is_lit()) {
                    sizes.insert(d.e.clone(), d.n);
                }
            } else if t.reads == 0 {
                outputs.push(t.name.clone());
            }
        }
        let source = format!(
            "def f({}) -> ({}) {{\n{}\n}}\n",
            params.join(", "),
            outputs.join(", "),
            self.s.stmts.join("\n")
        );
        Calls {
            name: "f".to_string(),
            source,
            inputs,
            sizes,
            ops: self.s.ops,
            theme,
        }
    }
}

// ---------------------------------------------------------------------
// Themes: operators and their weights.

const DENSE: &[(Op, u32)] = &[
    (chain, 5),
    (shared_r2, 5),
    (twice_r2, 3),
    (matmul, 10),
    (gemm, 2),
    (elementwise_r2, 5),
    (unary_r2, 3),
    (row, 2),
    (scale_r2, 2),
    (concat_r2, 3),
    (slice_r2, 1),
    (reshape_r2, 2),
    (batchnorm_r2, 1),
    (add_r1, 1),
];

const CONV: &[(Op, u32)] = &[
    (conv_pair, 5),
    (conv_then, 5),
    (shared_r4, 2),
    (twice_r4, 2),
    (conv, 10),
    (elementwise_r4, 4),
    (unary_r4, 3),
    (concat_r4, 3),
    (channel_affine, 3),
    (c11, 2),
    (pool, 2),
    (pad_r4, 1),
    (batchnorm_r4, 2),
    (scale_r4, 1),
    (flatten_r4, 1),
];

const BATCHED: &[(Op, u32)] = &[
    (chain_r3, 6),
    (batch_matmul, 8),
    (matmul_r3_r2, 4),
    (elementwise_r3, 3),
    (unary_r3, 2),
    (scale_r3, 2),
    (concat_r3, 2),
    (reshape_r3, 2),
    (matmul, 3),
];

const MIXED: &[(Op, u32)] = &[
    (chain, 2),
    (shared_r2, 2),
    (twice_r2, 1),
    (conv_pair, 2),
    (conv_then, 2),
    (chain_r3, 1),
    (matmul, 6),
    (gemm, 1),
    (elementwise_r2, 3),
    (unary_r2, 2),
    (row, 1),
    (scale_r2, 1),
    (concat_r2, 2),
    (slice_r2, 1),
    (reshape_r2, 1),
    (batchnorm_r2, 1),
    (conv, 5),
    (elementwise_r4, 2),
    (unary_r4, 1),
    (concat_r4, 1),
    (channel_affine, 2),
    (c11, 1),
    (pool, 1),
    (pad_r4, 1),
    (batchnorm_r4, 1),
    (flatten_r4, 1),
    (batch_matmul, 2),
    (matmul_r3_r2, 1),
    (reshape_r3, 1),
];

type Theme = (&'static str, &'static [(Op, u32)]);

const THEMES: &[Theme] = &[
    ("dense", DENSE),
    ("dense", DENSE),
    ("dense", DENSE),
    ("conv", CONV),
    ("conv", CONV),
    ("conv", CONV),
    ("batched", BATCHED),
    ("mixed", MIXED),
    ("mixed", MIXED),
];

// ---------------------------------------------------------------------
// Rank 2 (and 1).

/// `matmul`, `matmul_ta`, `matmul_tb` or `matmul_tab`.
fn matmul(b: &mut Builder) -> Option<()> {
    let (op, ta, tb) = b.rng.pick(&[
        ("matmul", false, false),
        ("matmul", false, false),
        ("matmul", false, false),
        ("matmul_ta", true, false),
        ("matmul_tb", false, true),
        ("matmul_tab", true, true),
    ]);
    let x = b.main(2)?;
    let [d0, d1] = <[Dim; 2]>::try_from(b.dims(x)).ok()?;
    let (m, k) = if ta { (d1, d0) } else { (d0, d1) };
    let y = b.operand(&if tb { [None, Some(k)] } else { [Some(k), None] })?;
    let n = b.dims(y)[usize::from(!tb)].clone();
    b.call(op, vec![Arg::T(x), Arg::T(y)], vec![m, n]);
    Some(())
}

/// `gemm` or `gemm_tb` with a bias, at unit scales most often.
fn gemm(b: &mut Builder) -> Option<()> {
    let (op, tb) = b
        .rng
        .pick(&[("gemm", false), ("gemm", false), ("gemm_tb", true)]);
    let x = b.main(2)?;
    let [m, k] = <[Dim; 2]>::try_from(b.dims(x)).ok()?;
    let y = b.operand(&if tb { [None, Some(k)] } else { [Some(k), None] })?;
    let n = b.dims(y)[usize::from(!tb)].clone();
    let c = b.operand(&[Some(n.clone())])?;
    let (alpha, beta) = if b.rng.chance(75) {
        ("1.0", "1.0")
    } else {
        (b.rng.pick(&["0.5", "2.0"]), b.rng.pick(&["1.0", "0.5"]))
    };
    b.call(
        op,
        vec![
            Arg::T(x),
            Arg::T(y),
            Arg::T(c),
            Arg::Float(alpha),
            Arg::Float(beta),
        ],
        vec![m, n],
    );
    Some(())
}

fn elementwise_r2(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["add_r2", "add_r2", "sub_r2", "mul_r2"]);
    let x = b.main(2)?;
    let d = b.dims(x);
    let y = b.operand(&[Some(d[0].clone()), Some(d[1].clone())])?;
    b.call(op, vec![Arg::T(x), Arg::T(y)], d);
    Some(())
}

fn unary_r2(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["relu_r2", "relu_r2", "neg_r2", "sigmoid_r2"]);
    let x = b.main(2)?;
    let d = b.dims(x);
    b.call(op, vec![Arg::T(x)], d);
    Some(())
}

/// A vector added to or multiplying each row.
fn row(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["add_r2_row", "add_r2_row", "mul_r2_row"]);
    let x = b.main(2)?;
    let d = b.dims(x);
    let v = b.operand(&[Some(d[1].clone())])?;
    b.call(op, vec![Arg::T(x), Arg::T(v)], d);
    Some(())
}

fn scale_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let d = b.dims(x);
    let s = b.operand(&[])?;
    b.call("mul_r2_scalar", vec![Arg::T(x), Arg::T(s)], d);
    Some(())
}

fn concat_r2(b: &mut Builder) -> Option<()> {
    let axis = b.rng.below(2);
    let x = b.main(2)?;
    let d = b.dims(x);
    let mut want = [Some(d[0].clone()), Some(d[1].clone())];
    want[axis] = None;
    let y = b.operand(&want)?;
    let mut out = d.clone();
    out[axis] = Dim::sum(&d[axis], &b.dims(y)[axis]);
    let op = ["concat_r2_a0", "concat_r2_a1"][axis];
    b.call(op, vec![Arg::T(x), Arg::T(y)], out);
    Some(())
}

/// Rows (and columns, or all of them) from a start to an end by a step.
fn slice_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let d = b.dims(x);
    let mut args = vec![Arg::T(x)];
    let mut out = Vec::new();
    for (k, dim) in d.iter().enumerate() {
        let n = dim.n;
        let (lo, hi, step) = if k == 1 && b.rng.coin() {
            (0, n, 1)
        } else {
            let lo = b.rng.range(0, n - 1);
            (lo, b.rng.range(lo + 1, n), b.rng.range(1, 2))
        };
        args.extend([Arg::Int(lo), Arg::Int(hi), Arg::Int(step)]);
        out.push(Dim::lit((hi - lo + step - 1) / step));
    }
    b.call("slice_r2", args, out);
    Some(())
}

/// A matrix flattened (and shaped back, or to another shape), or reshaped
/// to its own shape or its transpose's.
fn reshape_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let d = b.dims(x);
    let total = d[0].n * d[1].n;
    if b.rng.coin() {
        let (o0, o1) = if b.rng.coin() {
            (d[0].clone(), d[1].clone())
        } else {
            (d[1].clone(), d[0].clone())
        };
        let out = vec![b.size_dim(&o0), b.size_dim(&o1)];
        b.call(
            "reshape_r2_r2",
            vec![Arg::T(x), Arg::Size(o0), Arg::Size(o1)],
            out,
        );
        return Some(());
    }
    let flat = b.call(
        "reshape_r2_r1",
        vec![Arg::T(x), Arg::Int(total)],
        vec![Dim::lit(total)],
    );
    if b.rng.chance(70) {
        let (o0, o1) = if b.rng.chance(70) {
            (d[0].clone(), d[1].clone())
        } else {
            (Dim::lit(total), Dim::lit(1))
        };
        let out = vec![b.size_dim(&o0), b.size_dim(&o1)];
        b.call(
            "reshape_r1_r2",
            vec![Arg::T(flat), Arg::Size(o0), Arg::Size(o1)],
            out,
        );
    }
    Some(())
}

fn batchnorm_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let d = b.dims(x);
    let c = d[1].clone();
    let var = b.variance(&c)?;
    let mut args = vec![Arg::T(x)];
    for _ in 0..3 {
        args.push(Arg::T(b.operand(&[Some(c.clone())])?));
    }
    args.extend([Arg::T(var), Arg::Float("0.001")]);
    b.call("batchnorm_r2", args, d);
    Some(())
}

fn add_r1(b: &mut Builder) -> Option<()> {
    let x = b.main(1)?;
    let d = b.dims(x);
    let y = b.operand(&[Some(d[0].clone())])?;
    b.call("add_r1", vec![Arg::T(x), Arg::T(y)], d);
    Some(())
}

/// A chain of two matrix products, the second possibly with a transposed
/// operand (the rules' reassociations).
fn chain(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let [m, k] = <[Dim; 2]>::try_from(b.dims(x)).ok()?;
    let y = b.operand(&[Some(k), None])?;
    let n = b.dims(y)[1].clone();
    let t = b.call(
        "matmul",
        vec![Arg::T(x), Arg::T(y)],
        vec![m.clone(), n.clone()],
    );
    match b.rng.below(4) {
        0 => {
            let z = b.operand(&[Some(m), None])?;
            let p = b.dims(z)[1].clone();
            b.call("matmul_ta", vec![Arg::T(t), Arg::T(z)], vec![n, p]);
        }
        1 => {
            let z = b.operand(&[None, Some(n)])?;
            let p = b.dims(z)[0].clone();
            b.call("matmul_tb", vec![Arg::T(z), Arg::T(t)], vec![p, m]);
        }
        _ => {
            let z = b.operand(&[Some(n), None])?;
            let p = b.dims(z)[1].clone();
            b.call("matmul", vec![Arg::T(t), Arg::T(z)], vec![m, p]);
        }
    }
    Some(())
}

/// A sum or difference of two products sharing an operand (the rules'
/// distributivity): matrix products sharing their left or right operand,
/// or elementwise products.
fn shared_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let [m, k] = <[Dim; 2]>::try_from(b.dims(x)).ok()?;
    let (p, q, out) = match b.rng.below(4) {
        0 => {
            let y = b.operand(&[Some(k.clone()), None])?;
            let n = b.dims(y)[1].clone();
            let z = b.operand(&[Some(k), Some(n.clone())])?;
            let d = vec![m, n];
            let p = b.call("matmul", vec![Arg::T(x), Arg::T(y)], d.clone());
            (
                p,
                b.call("matmul", vec![Arg::T(x), Arg::T(z)], d.clone()),
                d,
            )
        }
        1 => {
            let y = b.operand(&[Some(m.clone()), Some(k.clone())])?;
            let z = b.operand(&[Some(k), None])?;
            let d = vec![m, b.dims(z)[1].clone()];
            let p = b.call("matmul", vec![Arg::T(x), Arg::T(z)], d.clone());
            (
                p,
                b.call("matmul", vec![Arg::T(y), Arg::T(z)], d.clone()),
                d,
            )
        }
        2 => {
            let y = b.operand(&[None, Some(k.clone())])?;
            let n = b.dims(y)[0].clone();
            let z = b.operand(&[Some(n.clone()), Some(k)])?;
            let d = vec![m, n];
            let p = b.call("matmul_tb", vec![Arg::T(x), Arg::T(y)], d.clone());
            (
                p,
                b.call("matmul_tb", vec![Arg::T(x), Arg::T(z)], d.clone()),
                d,
            )
        }
        _ => {
            let d = vec![m, k];
            let want: Vec<Option<Dim>> = d.iter().cloned().map(Some).collect();
            let y = b.operand(&want)?;
            let z = b.operand(&want)?;
            let p = b.call("mul_r2", vec![Arg::T(x), Arg::T(y)], d.clone());
            (
                p,
                b.call("mul_r2", vec![Arg::T(x), Arg::T(z)], d.clone()),
                d,
            )
        }
    };
    let op = b.rng.pick(&["add_r2", "add_r2", "sub_r2"]);
    b.call(op, vec![Arg::T(p), Arg::T(q)], out);
    Some(())
}

/// An operator undone or repeated: a negation twice, a ReLU twice, a
/// scale of a product.
fn twice_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(2)?;
    let d = b.dims(x);
    if b.rng.coin() {
        let y = b.call("neg_r2", vec![Arg::T(x)], d.clone());
        b.call("neg_r2", vec![Arg::T(y)], d);
        return Some(());
    }
    let k = d[1].clone();
    let y = b.operand(&[Some(k), None])?;
    let out = vec![d[0].clone(), b.dims(y)[1].clone()];
    let t = b.call("matmul", vec![Arg::T(x), Arg::T(y)], out.clone());
    let op = b.rng.pick(&["mul_r2_scalar", "neg_r2", "add_r2_row"]);
    let extra = match op {
        "mul_r2_scalar" => Some(b.operand(&[])?),
        "add_r2_row" => Some(b.operand(&[Some(out[1].clone())])?),
        _ => None,
    };
    let mut args = vec![Arg::T(t)];
    args.extend(extra.map(Arg::T));
    b.call(op, args, out);
    Some(())
}

// ---------------------------------------------------------------------
// Rank 4: convolutions and what follows them.

/// A convolution's attributes.
#[derive(Clone, Copy, Debug)]
struct Window {
    sh: i64,
    sw: i64,
    ph0: i64,
    pw0: i64,
    ph1: i64,
    pw1: i64,
    dh: i64,
    dw: i64,
    g: i64,
    kh: i64,
    kw: i64,
}

impl Window {
    /// Attributes for an input of `c` channels, `h` x `w`: most often one
    /// stride and one padding for both axes and no dilation (the rules'
    /// form), sometimes each attribute its own, or two groups (`plain`
    /// keeps the rules' form of one group).
    fn draw(b: &mut Builder, c: &Dim, h: &Dim, w: &Dim, plain: bool) -> Window {
        let g = if !plain && c.n % 2 == 0 && b.rng.chance(15) {
            2
        } else {
            1
        };
        let (sh, sw, ph0, pw0, ph1, pw1, dh, dw) = if plain || b.rng.chance(80) {
            let s = b.rng.range(1, 2);
            let p = b.rng.range(0, 1);
            (s, s, p, p, p, p, 1, 1)
        } else {
            let mut a = || b.rng.range(1, 2);
            let (sh, sw, dh, dw) = (a(), a(), a(), a());
            let mut p = || b.rng.range(0, 1);
            (sh, sw, p(), p(), p(), p(), dh, dw)
        };
        // The window fits the padded input: H + pads >= dh (KH - 1) + 1.
        let kh = b.rng.range(1, ((h.n + ph0 + ph1 - 1) / dh + 1).min(3));
        let kw = b.rng.range(1, ((w.n + pw0 + pw1 - 1) / dw + 1).min(3));
        Window {
            sh,
            sw,
            ph0,
            pw0,
            ph1,
            pw1,
            dh,
            dw,
            g,
            kh,
            kw,
        }
    }

    /// Filters for input `x` (of `f` output channels, when given).
    fn weight(&self, b: &mut Builder, x: usize, f: Option<Dim>) -> Option<usize> {
        let c = b.dims(x)[1].clone();
        let cg = if self.g == 1 && c.declarable() {
            c
        } else {
            Dim::lit(c.n / self.g)
        };
        let f = match f {
            Some(f) => Some(f),
            None if self.g == 2 => Some(Dim::lit(2 * b.rng.range(1, 2))),
            None => None,
        };
        b.operand(&[
            f,
            Some(cg),
            Some(Dim::lit(self.kh)),
            Some(Dim::lit(self.kw)),
        ])
    }

    /// `conv2d` of `x` by `wt`, or `conv2d_bias` with `bias`.
    fn call(&self, b: &mut Builder, x: usize, wt: usize, bias: Option<usize>) -> usize {
        let [n, _, h, w] = <[Dim; 4]>::try_from(b.dims(x)).expect("an image");
        let f = b.dims(wt)[0].clone();
        let out = |size: &Dim, p0: i64, p1: i64, d: i64, k: i64, s: i64| {
            Dim::derived(
                (size.n + p0 + p1 - d * (k - 1) - 1) / s + 1,
                format!(
                    "(({} + {p0} + {p1} - {d} * ({k} - 1) - 1) / {s} + 1)",
                    size.e
                ),
                &[size],
            )
        };
        let dims = vec![
            n,
            f,
            out(&h, self.ph0, self.ph1, self.dh, self.kh, self.sh),
            out(&w, self.pw0, self.pw1, self.dw, self.kw, self.sw),
        ];
        let mut args = vec![Arg::T(x), Arg::T(wt)];
        args.extend(bias.map(Arg::T));
        for v in [
            self.sh, self.sw, self.ph0, self.pw0, self.ph1, self.pw1, self.dh, self.dw, self.g,
        ] {
            args.push(Arg::Int(v));
        }
        let op = if bias.is_some() {
            "conv2d_bias"
        } else {
            "conv2d"
        };
        b.call(op, args, dims)
    }
}

/// `conv2d` or `conv2d_bias`.
fn conv(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let [_, c, h, w] = <[Dim; 4]>::try_from(b.dims(x)).ok()?;
    let window = Window::draw(b, &c, &h, &w, false);
    let wt = window.weight(b, x, None)?;
    let bias = if b.rng.chance(25) {
        let f = b.dims(wt)[0].clone();
        Some(b.operand(&[Some(f)])?)
    } else {
        None
    };
    window.call(b, x, wt, bias);
    Some(())
}

/// Two convolutions of one window sharing their input or their filters,
/// summed or joined along the channels (the rules' merges).
fn conv_pair(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let [_, c, h, w] = <[Dim; 4]>::try_from(b.dims(x)).ok()?;
    let window = Window::draw(b, &c, &h, &w, true);
    let w1 = window.weight(b, x, None)?;
    let y1 = window.call(b, x, w1, None);
    let f = b.dims(w1)[0].clone();
    let y2 = match b.rng.below(3) {
        0 => {
            let w2 = window.weight(b, x, Some(f))?;
            window.call(b, x, w2, None)
        }
        1 => {
            let w2 = window.weight(b, x, None)?;
            window.call(b, x, w2, None)
        }
        _ => {
            let want: Vec<Option<Dim>> = b.dims(x).into_iter().map(Some).collect();
            let x2 = b.operand(&want)?;
            let w2 = if b.rng.coin() {
                w1
            } else {
                window.weight(b, x2, Some(f))?
            };
            window.call(b, x2, w2, None)
        }
    };
    let (d1, d2) = (b.dims(y1), b.dims(y2));
    if d1 == d2 && b.rng.chance(60) {
        b.call("add_r4", vec![Arg::T(y1), Arg::T(y2)], d1);
    } else {
        let mut out = d1.clone();
        out[1] = Dim::sum(&d1[1], &d2[1]);
        b.call("concat_r4_a1", vec![Arg::T(y1), Arg::T(y2)], out);
    }
    Some(())
}

/// A convolution and what follows it: a per-channel scale or bias, a
/// batch norm, a scalar scale, a ReLU (the rules' folds).
fn conv_then(b: &mut Builder) -> Option<()> {
    conv(b)?;
    let next: Op = b.rng.pick(&[
        channel_affine as Op,
        channel_affine,
        batchnorm_r4,
        c11,
        scale_r4,
        unary_r4,
    ]);
    next(b)
}

/// A sum of two products of one operand by two others (the rules'
/// distributivity).
fn shared_r4(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let d = b.dims(x);
    let want: Vec<Option<Dim>> = d.iter().cloned().map(Some).collect();
    let y = b.operand(&want)?;
    let z = b.operand(&want)?;
    let p = b.call("mul_r4", vec![Arg::T(x), Arg::T(y)], d.clone());
    let q = b.call("mul_r4", vec![Arg::T(x), Arg::T(z)], d.clone());
    b.call("add_r4", vec![Arg::T(p), Arg::T(q)], d);
    Some(())
}

/// An operator undone or repeated: a negation twice, a ReLU twice.
fn twice_r4(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["relu_r4", "neg_r4"]);
    let x = b.main(4)?;
    let d = b.dims(x);
    let y = b.call(op, vec![Arg::T(x)], d.clone());
    b.call(op, vec![Arg::T(y)], d);
    Some(())
}

fn elementwise_r4(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["add_r4", "add_r4", "mul_r4"]);
    let x = b.main(4)?;
    let d = b.dims(x);
    let want: Vec<Option<Dim>> = d.iter().cloned().map(Some).collect();
    let y = b.operand(&want)?;
    b.call(op, vec![Arg::T(x), Arg::T(y)], d);
    Some(())
}

fn unary_r4(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["relu_r4", "relu_r4", "neg_r4"]);
    let x = b.main(4)?;
    let d = b.dims(x);
    b.call(op, vec![Arg::T(x)], d);
    Some(())
}

/// Along the channels, or the batch (as filters are joined).
fn concat_r4(b: &mut Builder) -> Option<()> {
    let axis = if b.rng.chance(80) { 1 } else { 0 };
    let x = b.main(4)?;
    let d = b.dims(x);
    let mut want: Vec<Option<Dim>> = d.iter().cloned().map(Some).collect();
    want[axis] = None;
    let y = b.operand(&want)?;
    let mut out = d.clone();
    out[axis] = Dim::sum(&d[axis], &b.dims(y)[axis]);
    let op = ["concat_r4_a0", "concat_r4_a1"][axis];
    b.call(op, vec![Arg::T(x), Arg::T(y)], out);
    Some(())
}

/// A per-channel scale or shift as ONNX writes it: a vector reshaped to
/// 1 x C x 1 x 1 and broadcast.
fn channel_affine(b: &mut Builder) -> Option<()> {
    let op = b
        .rng
        .pick(&["mul_bcast_r4", "mul_bcast_r4", "add_bcast_r4"]);
    let x = b.main(4)?;
    let d = b.dims(x);
    let v = b.operand(&[Some(d[1].clone())])?;
    let c = b.size_dim(&d[1]);
    let one = Dim::lit(1);
    let r = b.call(
        "reshape_r1_r4",
        vec![
            Arg::T(v),
            Arg::Int(1),
            Arg::Size(d[1].clone()),
            Arg::Int(1),
            Arg::Int(1),
        ],
        vec![one.clone(), c.clone(), one.clone(), one.clone()],
    );
    let out = vec![
        Dim::max(&d[0], &one),
        Dim::max(&d[1], &c),
        Dim::max(&d[2], &one),
        Dim::max(&d[3], &one),
    ];
    b.call(op, vec![Arg::T(x), Arg::T(r)], out);
    Some(())
}

/// A per-channel bias or scale of C x 1 x 1.
fn c11(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["add_r4_c11", "mul_r4_c11"]);
    let x = b.main(4)?;
    let d = b.dims(x);
    let v = b.operand(&[Some(d[1].clone()), Some(Dim::lit(1)), Some(Dim::lit(1))])?;
    b.call(op, vec![Arg::T(x), Arg::T(v)], d);
    Some(())
}

/// Max pooling (most often unpadded), or global max pooling.
fn pool(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let [n, c, h, w] = <[Dim; 4]>::try_from(b.dims(x)).ok()?;
    if b.rng.chance(30) {
        b.call(
            "global_maxpool2d",
            vec![Arg::T(x)],
            vec![n, c, Dim::lit(1), Dim::lit(1)],
        );
        return Some(());
    }
    let s = b.rng.range(1, 2);
    // A pad smaller than the window, so that every window holds a point.
    let kh = b.rng.range(1, h.n.min(3));
    let kw = b.rng.range(1, w.n.min(3));
    let p = if kh > 1 && kw > 1 && b.rng.chance(25) {
        1
    } else {
        0
    };
    let out = |size: &Dim, k: i64| {
        Dim::derived(
            (size.n + 2 * p - k) / s + 1,
            format!("(({} + {p} + {p} - {k}) / {s} + 1)", size.e),
            &[size],
        )
    };
    let dims = vec![n, c, out(&h, kh), out(&w, kw)];
    let mut args = vec![
        Arg::T(x),
        Arg::Int(kh),
        Arg::Int(kw),
        Arg::Int(s),
        Arg::Int(s),
    ];
    args.extend((0..4).map(|_| Arg::Int(p)));
    b.call("maxpool2d", args, dims);
    Some(())
}

/// Zeros around the height and width.
fn pad_r4(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let d = b.dims(x);
    let pads: Vec<i64> = (0..4).map(|_| b.rng.range(0, 1)).collect();
    let grow = |size: &Dim, lo: i64, hi: i64| {
        Dim::derived(
            size.n + lo + hi,
            format!("({} + {lo} + {hi})", size.e),
            &[size],
        )
    };
    let out = vec![
        grow(&d[0], 0, 0),
        grow(&d[1], 0, 0),
        grow(&d[2], pads[0], pads[2]),
        grow(&d[3], pads[1], pads[3]),
    ];
    let mut args = vec![Arg::T(x), Arg::Int(0), Arg::Int(0)];
    args.extend([Arg::Int(pads[0]), Arg::Int(pads[1])]);
    args.extend([Arg::Int(0), Arg::Int(0)]);
    args.extend([Arg::Int(pads[2]), Arg::Int(pads[3]), Arg::Float("0.0")]);
    b.call("pad_r4", args, out);
    Some(())
}

fn batchnorm_r4(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let d = b.dims(x);
    let c = d[1].clone();
    let var = b.variance(&c)?;
    let mut args = vec![Arg::T(x)];
    for _ in 0..3 {
        args.push(Arg::T(b.operand(&[Some(c.clone())])?));
    }
    args.extend([Arg::T(var), Arg::Float("0.001")]);
    b.call("batchnorm_r4", args, d);
    Some(())
}

fn scale_r4(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let d = b.dims(x);
    let s = b.operand(&[])?;
    b.call("mul_r4_scalar", vec![Arg::T(x), Arg::T(s)], d);
    Some(())
}

fn flatten_r4(b: &mut Builder) -> Option<()> {
    let x = b.main(4)?;
    let [n, c, h, w] = <[Dim; 4]>::try_from(b.dims(x)).ok()?;
    let chw = Dim::derived(
        c.n * h.n * w.n,
        format!("({} * {} * {})", c.e, h.e, w.e),
        &[&c, &h, &w],
    );
    b.call("flatten_r4", vec![Arg::T(x)], vec![n, chw]);
    Some(())
}

// ---------------------------------------------------------------------
// Rank 3: batched products.

fn batch_matmul(b: &mut Builder) -> Option<()> {
    let tb = b.rng.chance(30);
    let x = b.main(3)?;
    let [nb, m, k] = <[Dim; 3]>::try_from(b.dims(x)).ok()?;
    let y = b.operand(&if tb {
        [Some(nb.clone()), None, Some(k)]
    } else {
        [Some(nb.clone()), Some(k), None]
    })?;
    let n = b.dims(y)[if tb { 1 } else { 2 }].clone();
    let op = if tb {
        "batch_matmul_tb"
    } else {
        "batch_matmul"
    };
    b.call(op, vec![Arg::T(x), Arg::T(y)], vec![nb, m, n]);
    Some(())
}

fn matmul_r3_r2(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let [nb, m, k] = <[Dim; 3]>::try_from(b.dims(x)).ok()?;
    let y = b.operand(&[Some(k), None])?;
    let n = b.dims(y)[1].clone();
    b.call("matmul_r3_r2", vec![Arg::T(x), Arg::T(y)], vec![nb, m, n]);
    Some(())
}

fn elementwise_r3(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let d = b.dims(x);
    let want: Vec<Option<Dim>> = d.iter().cloned().map(Some).collect();
    let y = b.operand(&want)?;
    b.call("add_r3", vec![Arg::T(x), Arg::T(y)], d);
    Some(())
}

fn unary_r3(b: &mut Builder) -> Option<()> {
    let op = b.rng.pick(&["relu_r3", "neg_r3"]);
    let x = b.main(3)?;
    let d = b.dims(x);
    b.call(op, vec![Arg::T(x)], d);
    Some(())
}

fn scale_r3(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let d = b.dims(x);
    let s = b.operand(&[])?;
    b.call("mul_r3_scalar", vec![Arg::T(x), Arg::T(s)], d);
    Some(())
}

fn concat_r3(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let d = b.dims(x);
    let y = b.operand(&[None, Some(d[1].clone()), Some(d[2].clone())])?;
    let mut out = d.clone();
    out[0] = Dim::sum(&d[0], &b.dims(y)[0]);
    b.call("concat_r3_a0", vec![Arg::T(x), Arg::T(y)], out);
    Some(())
}

/// A chain of two batched products, or of two products of a batch by
/// one matrix; or a sum of two batched products sharing their left
/// operand.
fn chain_r3(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let [nb, m, k] = <[Dim; 3]>::try_from(b.dims(x)).ok()?;
    match b.rng.below(3) {
        0 => {
            let y = b.operand(&[Some(nb.clone()), Some(k), None])?;
            let n = b.dims(y)[2].clone();
            let t = b.call(
                "batch_matmul",
                vec![Arg::T(x), Arg::T(y)],
                vec![nb.clone(), m.clone(), n.clone()],
            );
            let z = b.operand(&[Some(nb.clone()), Some(n), None])?;
            let p = b.dims(z)[2].clone();
            b.call("batch_matmul", vec![Arg::T(t), Arg::T(z)], vec![nb, m, p]);
        }
        1 => {
            let y = b.operand(&[Some(k), None])?;
            let n = b.dims(y)[1].clone();
            let t = b.call(
                "matmul_r3_r2",
                vec![Arg::T(x), Arg::T(y)],
                vec![nb.clone(), m.clone(), n.clone()],
            );
            let z = b.operand(&[Some(n), None])?;
            let p = b.dims(z)[1].clone();
            b.call("matmul_r3_r2", vec![Arg::T(t), Arg::T(z)], vec![nb, m, p]);
        }
        _ => {
            let y = b.operand(&[Some(nb.clone()), Some(k.clone()), None])?;
            let n = b.dims(y)[2].clone();
            let z = b.operand(&[Some(nb.clone()), Some(k), Some(n.clone())])?;
            let d = vec![nb, m, n];
            let p = b.call("batch_matmul", vec![Arg::T(x), Arg::T(y)], d.clone());
            let q = b.call("batch_matmul", vec![Arg::T(x), Arg::T(z)], d.clone());
            b.call("add_r3", vec![Arg::T(p), Arg::T(q)], d);
        }
    }
    Some(())
}

/// The two leading axes merged.
fn reshape_r3(b: &mut Builder) -> Option<()> {
    let x = b.main(3)?;
    let d = b.dims(x);
    let rows = d[0].n * d[1].n;
    let cols = b.size_dim(&d[2]);
    b.call(
        "reshape_r3_r2",
        vec![Arg::T(x), Arg::Int(rows), Arg::Size(d[2].clone())],
        vec![Dim::lit(rows), cols],
    );
    Some(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use interp::{Arg, Mode, Tensor};

    use super::*;

    /// Every program checks after the prelude, its inputs have the
    /// declared shapes at its sizes, and the interpreter runs it; between
    /// them the programs call every operator the themes name.
    #[test]
    fn programs_check_and_run() {
        let prelude = std::fs::read_to_string(crate::root().join("ops/prelude.tc")).unwrap();
        let mut called = BTreeSet::new();
        let mut symbolic = 0;
        for seed in 0..200 {
            let options = Options {
                statements: 1 + (seed as usize % 6),
                symbol_scalars: seed % 4 == 0,
                ..Options::default()
            };
            let c = calls(&mut Rng::new(seed), &options);
            assert!(c.ops.len() >= options.statements, "{}", c.source);
            let source = format!("{prelude}\n{}", c.source);
            let program = match tc::check_source(&source) {
                Ok(p) => p.program,
                Err(d) => panic!(
                    "seed {seed}:\n{}\n{}",
                    c.source,
                    tc::render_diagnostics(&d, "calls.tc", &source)
                ),
            };
            let args: HashMap<String, Arg> = c
                .inputs
                .iter()
                .enumerate()
                .map(|(k, (name, shape))| {
                    let t = Tensor::random(ir::DType::F32, shape, seed * 100 + k as u64);
                    (name.clone(), Arg::Tensor(t))
                })
                .collect();
            let sizes: HashMap<String, i64> =
                c.sizes.iter().map(|(k, v)| (k.clone(), *v)).collect();
            symbolic += usize::from(!sizes.is_empty());
            if let Err(e) = interp::run(&program, "f", &args, &sizes, Mode::Real) {
                panic!("seed {seed}:\n{}\n{e}", c.source);
            }
            called.extend(c.ops.iter().copied());
        }
        assert!((40..160).contains(&symbolic), "{symbolic} symbolic");
        assert!(called.len() >= 45, "{called:?}");
    }

    /// A program of fewer statements is the start of one of more.
    #[test]
    fn fewer_statements_are_a_prefix() {
        for seed in 0..50 {
            let long = calls(
                &mut Rng::new(seed),
                &Options {
                    statements: 6,
                    ..Options::default()
                },
            );
            let short = calls(
                &mut Rng::new(seed),
                &Options {
                    statements: 3,
                    ..Options::default()
                },
            );
            assert_eq!(short.ops[..], long.ops[..short.ops.len()], "seed {seed}");
        }
    }
}
