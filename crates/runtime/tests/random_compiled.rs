//! Random programs, compiled: a seeded generator writes Tensor Comprehensions
//! defs with their sizes, and every def the checker accepts at those sizes
//! (`tc::check_source_with_sizes`) is compiled through the whole native
//! path (lowering, the cpu pass pipeline, C emission, the system C
//! compiler, the runtime) and run on seeded random inputs. Its outputs are
//! the reference interpreter's (floats within 1e-4 relative, integers
//! exactly), on two runs of one state, with library matmuls and, for every
//! case the library takes and a quarter of the others, without them; where
//! the interpreter fails (an integer division by zero) the compiled run
//! fails too.
//!
//! The programs cover what the compiled path specializes on: ranks 1 to 4,
//! affine subscripts (`X(i + 2*k - 1, j)`), `=` and the reductions `+=!
//! max=! min=! *=!`, explicit `where` ranges that make reads fall outside
//! their inputs (padding: such points contribute nothing), odd sizes and
//! rows of 16 and more (vectors with tails, partial vectors, jammed
//! indices), matmuls and convolutions, float32, float64 and int32, and
//! defs of two statements (a temporary feeding a second comprehension, or
//! a second statement accumulating onto the first). The cases are the same
//! on every run (fixed seeds of `testkit::Rng`); a failure prints the def and its
//! sizes.

mod common;

use common::{cache, close, options};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use codegen::cache::KernelCache;
use interp::{Arg, Mode, RunError, Tensor};
use ir::{DType, Param, Program, Stmt};
use kernel::{Block, RefDir, StmtKind};
use testkit::Rng;

/// Each case costs a C compile (about 0.2 s at `-O3`): 150 of them take
/// about 20 s on two cores.
const CASES: u64 = 150;
const SEED: u64 = 0x7e55_e7a5_eed5;

/// Generic statements stay below this many points of their iteration box,
/// and inputs below this many elements, so the interpreter is quick.
const MAX_POINTS: i64 = 60_000;
const MAX_ELEMENTS: i64 = 300_000;

/// Odd sizes, and sizes around and above the 16 float32 lanes of a vector.
const SIZES: [i64; 10] = [1, 3, 5, 7, 13, 16, 17, 19, 20, 33];
const WIDE: [i64; 5] = [16, 17, 19, 20, 33];
const SMALL: [i64; 7] = [1, 2, 3, 5, 7, 13, 17];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    F32,
    F64,
    I32,
}

impl Ty {
    fn random(rng: &mut Rng, f64_percent: u64, i32_percent: u64) -> Ty {
        let x = rng.below(100) as u64;
        if x < f64_percent {
            Ty::F64
        } else if x < f64_percent + i32_percent {
            Ty::I32
        } else {
            Ty::F32
        }
    }

    fn name(self) -> &'static str {
        match self {
            Ty::F32 => "float",
            Ty::F64 => "double",
            Ty::I32 => "int32",
        }
    }

    fn max(self) -> &'static str {
        match self {
            Ty::F32 => "fmaxf",
            Ty::F64 => "fmax",
            Ty::I32 => "max",
        }
    }

    fn min(self) -> &'static str {
        match self {
            Ty::F32 => "fminf",
            Ty::F64 => "fmin",
            Ty::I32 => "min",
        }
    }
}

/// A generated def `random` with the sizes of its symbols.
struct Case {
    family: &'static str,
    source: String,
    sizes: BTreeMap<String, i64>,
}

/// A def under construction: its parameters and the sizes of their
/// symbols.
struct Def {
    ty: Ty,
    params: Vec<String>,
    sizes: BTreeMap<String, i64>,
    /// The element count of the largest input.
    largest: i64,
}

impl Def {
    fn new(ty: Ty) -> Def {
        Def {
            ty,
            params: Vec::new(),
            sizes: BTreeMap::new(),
            largest: 0,
        }
    }

    /// Adds tensor parameter `name` with dimensions (size symbol, size).
    fn param(&mut self, name: &str, dims: &[(&str, i64)]) {
        for (s, n) in dims {
            self.sizes.insert(s.to_string(), *n);
        }
        let symbols: Vec<&str> = dims.iter().map(|(s, _)| *s).collect();
        self.add(name, &symbols.join(", "), dims.iter().map(|(_, n)| n));
    }

    /// A fresh input with dimensions of these sizes, each a new size symbol
    /// or (sometimes) a constant.
    fn input(&mut self, rng: &mut Rng, dims: &[i64]) -> String {
        let name = format!("X{}", self.params.len());
        let texts: Vec<String> = dims
            .iter()
            .map(|&n| {
                if rng.chance(10) {
                    return n.to_string();
                }
                let s = format!("D{}", self.sizes.len());
                self.sizes.insert(s.clone(), n);
                s
            })
            .collect();
        self.add(&name, &texts.join(", "), dims);
        name
    }

    fn add<'a>(&mut self, name: &str, dims: &str, sizes: impl IntoIterator<Item = &'a i64>) {
        self.params
            .push(format!("{}({dims}) {name}", self.ty.name()));
        self.largest = self.largest.max(sizes.into_iter().product());
    }

    /// The upper bound of a `where` range of `n` points: half the time a
    /// size symbol of that value if there is one (`h in 0:H`), else `n`.
    fn bound(&self, rng: &mut Rng, n: i64) -> String {
        match self.sizes.iter().find(|(_, v)| **v == n) {
            Some((s, _)) if rng.chance(50) => s.clone(),
            _ => n.to_string(),
        }
    }

    /// The case, unless an input is too large.
    fn case(self, family: &'static str, outputs: &[&str], stmts: &[String]) -> Option<Case> {
        if self.largest > MAX_ELEMENTS {
            return None;
        }
        let body: String = stmts.iter().map(|s| format!("  {s}\n")).collect();
        Some(Case {
            family,
            source: format!(
                "def random({}) -> ({}) {{\n{body}}}\n",
                self.params.join(", "),
                outputs.join(", ")
            ),
            sizes: self.sizes,
        })
    }
}

/// How an iterator of a generated statement gets its range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// `where v in 0:n`.
    Where,
    /// Inferred: the statement reads some input at `v` alone in a
    /// dimension of size `n`.
    Infer,
    /// Inferred from a subscript `v` alone that is already there (the left
    /// side's known shape, or a temporary read at its own iterators).
    Given,
}

#[derive(Clone, Copy)]
struct Iter {
    name: &'static str,
    n: i64,
    bound: Bound,
}

/// A subscript over `iters` (mentioning iterator `with`, if any) and the
/// size of the dimension it indexes. An iterator not fixed by `where`
/// appears alone only as itself over a dimension of its size, so range
/// inference gives every iterator exactly `0:n`; sums of several iterators
/// may then reach outside the dimension only where `padded`.
fn subscript(rng: &mut Rng, iters: &[Iter], with: Option<usize>, padded: bool) -> (String, i64) {
    let terms = match with {
        Some(_) => 1 + rng.below(2),
        None => rng.pick(&[0, 1, 1, 2, 2]),
    }
    .min(iters.len());
    let mut vars: Vec<usize> = with.into_iter().collect();
    while vars.len() < terms {
        let v = rng.below(iters.len());
        if !vars.contains(&v) {
            vars.push(v);
        }
    }
    if let [v] = vars[..] {
        if iters[v].bound != Bound::Where || rng.chance(30) {
            return (iters[v].name.to_string(), iters[v].n);
        }
    }
    let terms: Vec<(usize, i64)> = vars
        .iter()
        .map(|&v| (v, rng.pick(&[1, 1, 2, -1])))
        .collect();
    let lo: i64 = terms
        .iter()
        .map(|&(v, c)| (c * (iters[v].n - 1)).min(0))
        .sum();
    let hi: i64 = terms
        .iter()
        .map(|&(v, c)| (c * (iters[v].n - 1)).max(0))
        .sum();
    let (offset, size) = if padded && !terms.is_empty() && rng.chance(50) {
        // Reads past either edge: those points contribute nothing.
        let offset = -lo - rng.range(0, 2);
        (offset, (hi + offset + 1 - rng.range(0, 2)).max(1))
    } else {
        let offset = -lo + rng.range(0, 1);
        (offset, hi + offset + 1 + rng.range(0, 1))
    };
    let mut text = String::new();
    for &(v, c) in &terms {
        let name = iters[v].name;
        let (sign, term) = match c {
            1 => ("+", name.to_string()),
            -1 => ("-", name.to_string()),
            c => ("+", format!("{c}*{name}")),
        };
        text = match (text.is_empty(), sign) {
            (true, "-") => format!("-{term}"),
            (true, _) => term,
            (false, s) => format!("{text} {s} {term}"),
        };
    }
    let text = match (text.is_empty(), offset) {
        (true, o) => o.to_string(),
        (false, 0) => text,
        (false, o) if o < 0 => format!("{text} - {}", -o),
        (false, o) => format!("{text} + {o}"),
    };
    (text, size)
}

/// At least `count` reads of fresh inputs of ranks 1 to 4 for a statement
/// over `iters`: every `Infer` iterator is read alone somewhere, and every
/// iterator of `must` appears somewhere.
fn reads(
    rng: &mut Rng,
    def: &mut Def,
    iters: &[Iter],
    must: &[usize],
    count: usize,
    padded: bool,
) -> Vec<String> {
    let alone: Vec<usize> = (0..iters.len())
        .filter(|&v| iters[v].bound == Bound::Infer)
        .collect();
    let mut ranks: Vec<usize> = (0..count).map(|_| 1 + rng.below(4)).collect();
    while ranks.iter().sum::<usize>() < alone.len() + must.len() {
        match ranks.iter_mut().find(|r| **r < 4) {
            Some(r) => *r += 1,
            None => ranks.push(1),
        }
    }
    let mut order: Vec<usize> = (0..ranks.iter().sum()).collect();
    rng.shuffle(&mut order);
    let mut subs = vec![(String::new(), 0); order.len()];
    for (k, &slot) in order.iter().enumerate() {
        subs[slot] = match (
            alone.get(k),
            k.checked_sub(alone.len()).and_then(|m| must.get(m)),
        ) {
            (Some(&v), _) => (iters[v].name.to_string(), iters[v].n),
            (None, Some(&v)) => subscript(rng, iters, Some(v), padded),
            (None, None) => subscript(rng, iters, None, padded),
        };
    }
    let mut subs = subs.into_iter();
    ranks
        .iter()
        .map(|&r| {
            let (texts, dims): (Vec<String>, Vec<i64>) = subs.by_ref().take(r).unzip();
            format!("{}({})", def.input(rng, &dims), texts.join(", "))
        })
        .collect()
}

/// The reads combined with `+ - * /`, max and min.
fn body(rng: &mut Rng, ty: Ty, reads: &[String]) -> String {
    let (first, rest) = reads.split_first().expect("a read");
    let mut e = match rng.below(6) {
        0 => format!("-{first}"),
        1 => format!("{first} * 3"),
        2 => format!("{first} + 1"),
        _ => first.clone(),
    };
    for r in rest {
        e = match rng.below(12) {
            0..=3 => format!("{e} + {r}"),
            4 => format!("{e} - {r}"),
            5..=7 => format!("({e}) * {r}"),
            8 => format!("{}({e}, {r})", ty.max()),
            9 => format!("{}({e}, {r})", ty.min()),
            // Integer inputs are 0 to 7: a bare divisor is sometimes zero,
            // which is an error on both paths. It comes up at two of the
            // twelve draws so that the int32 cases (about a seventh) include
            // such failures for the test to check.
            10 | 11 if ty == Ty::I32 && rng.chance(50) => format!("({e}) / {r}"),
            10 if ty == Ty::I32 => format!("({e}) / ({r} + 1)"),
            10 => format!("({e}) / ({r} + 3)"),
            _ => format!("{e} - {r} * 2"),
        };
    }
    e
}

/// `lhs(first rank iterators) op body where ...` over fresh inputs (and
/// `fixed`, a read already written).
fn comprehension(
    rng: &mut Rng,
    def: &mut Def,
    lhs: &str,
    iters: &[Iter],
    rank: usize,
    op: &str,
    fixed: Option<String>,
) -> String {
    let must: Vec<usize> = (rank..iters.len())
        .filter(|&v| iters[v].bound == Bound::Where)
        .collect();
    let count = if fixed.is_some() {
        rng.below(3)
    } else {
        1 + rng.below(3)
    };
    let mut all = reads(rng, def, iters, &must, count, op != "=");
    if let Some(f) = fixed {
        all.insert(rng.below(all.len() + 1), f);
    }
    let wheres: Vec<String> = iters
        .iter()
        .filter(|it| it.bound == Bound::Where)
        .map(|it| format!("{} in 0:{}", it.name, def.bound(rng, it.n)))
        .collect();
    let names: Vec<&str> = iters[..rank].iter().map(|it| it.name).collect();
    let wheres = if wheres.is_empty() {
        String::new()
    } else {
        format!(" where {}", wheres.join(", "))
    };
    format!(
        "{lhs}({}) {op} {}{wheres}",
        names.join(", "),
        body(rng, def.ty, &all)
    )
}

/// A statement of random rank, reductions, subscripts and ranges; or two:
/// a temporary read by a second comprehension, or a second statement
/// accumulating onto the first.
fn generic(rng: &mut Rng) -> Option<Case> {
    let mut def = Def::new(Ty::random(rng, 15, 15));
    let rank = 1 + rng.below(4);
    let reductions = rng.pick(&[0, 0, 1, 1, 1, 2]);
    let op = if reductions == 0 && rng.chance(60) {
        "="
    } else {
        rng.pick(&["+=!", "+=!", "+=!", "+=!", "max=!", "max=!", "min=!", "*=!"])
    };
    let mut iters: Vec<Iter> = ["i", "j", "k", "l"][..rank]
        .iter()
        .enumerate()
        .map(|(d, &name)| Iter {
            name,
            n: if d + 1 == rank && rng.chance(40) {
                rng.pick(&WIDE)
            } else {
                rng.pick(&SIZES)
            },
            bound: if rng.chance(50) {
                Bound::Where
            } else {
                Bound::Infer
            },
        })
        .collect();
    for &name in &["r", "s"][..reductions] {
        iters.push(Iter {
            name,
            n: rng.pick(&SMALL),
            bound: if rng.chance(30) {
                Bound::Where
            } else {
                Bound::Infer
            },
        });
    }
    while iters.iter().map(|it| it.n).product::<i64>() > MAX_POINTS {
        let v = rng.below(iters.len());
        iters[v].n = rng.pick(&[1, 2, 3, 5]);
    }
    let given: Vec<Iter> = iters[..rank]
        .iter()
        .map(|it| Iter {
            bound: Bound::Given,
            ..*it
        })
        .collect();
    match rng.below(10) {
        0..=6 => {
            let s = comprehension(rng, &mut def, "O", &iters, rank, op, None);
            def.case("generic", &["O"], &[s])
        }
        7 | 8 => {
            let first = comprehension(rng, &mut def, "T", &iters, rank, op, None);
            let names: Vec<&str> = given.iter().map(|it| it.name).collect();
            let fixed = format!("T({})", names.join(", "));
            let mut order = given;
            rng.shuffle(&mut order);
            let op = rng.pick(&["=", "+=!", "max=!"]);
            let keep = if op == "=" { rank } else { 1 + rng.below(rank) };
            let second = comprehension(rng, &mut def, "O", &order, keep, op, Some(fixed));
            def.case("temporary", &["O"], &[first, second])
        }
        _ => {
            let first = comprehension(rng, &mut def, "O", &iters, rank, op, None);
            let mut more = given;
            if rng.chance(40) {
                more.push(Iter {
                    name: "r",
                    n: rng.pick(&[1, 2, 3, 5, 7]),
                    bound: Bound::Infer,
                });
            }
            let op = if rng.chance(80) { "+=" } else { "max=" };
            let second = comprehension(rng, &mut def, "O", &more, rank, op, None);
            def.case("accumulate", &["O"], &[first, second])
        }
    }
}

/// A (batched, transposed) matmul, alone or with a bias, a ReLU or a
/// second matmul after it.
fn matmul(rng: &mut Rng) -> Option<Case> {
    let mut def = Def::new(Ty::random(rng, 10, 10));
    let (m, n, k) = (rng.pick(&SIZES), rng.pick(&SIZES), rng.pick(&SIZES));
    let (b, q): (&str, Vec<(&str, i64)>) = if rng.chance(25) {
        ("b, ", vec![("Q", rng.range(1, 3))])
    } else {
        ("", Vec::new())
    };
    let dims = |x: &[(&'static str, i64)]| [q.as_slice(), x].concat();
    let a = if rng.chance(20) {
        def.param("A", &dims(&[("K", k), ("M", m)]));
        "k, i"
    } else {
        def.param("A", &dims(&[("M", m), ("K", k)]));
        "i, k"
    };
    let bt = if rng.chance(20) {
        def.param("B", &dims(&[("N", n), ("K", k)]));
        "j, k"
    } else {
        def.param("B", &dims(&[("K", k), ("N", n)]));
        "k, j"
    };
    // A max-times product is no matmul for the library.
    let op = if rng.chance(15) { "max=!" } else { "+=!" };
    let mm = |out: &str| format!("{out}({b}i, j) {op} A({b}{a}) * B({b}{bt})");
    let max = def.ty.max();
    match rng.below(5) {
        0 => {
            def.param("Bias", &[("N", n)]);
            let bias = format!("O({b}i, j) += Bias(j)");
            def.case("matmul", &["O"], &[mm("O"), bias])
        }
        1 => {
            let relu = format!("R({b}i, j) = {max}(O({b}i, j), 0)");
            def.case("matmul", &["O", "R"], &[mm("O"), relu])
        }
        2 => {
            def.param("C", &dims(&[("N", n), ("L", rng.pick(&SIZES))]));
            let second = format!("O({b}i, l) +=! T({b}i, j) * C({b}j, l)");
            def.case("matmul", &["O"], &[mm("T"), second])
        }
        _ => def.case("matmul", &["O"], &[mm("O")]),
    }
}

/// A 2-d, depthwise or 1-d convolution or a pooling, padded or not,
/// strided or not, sometimes with a bias and ReLU after it.
fn convolution(rng: &mut Rng) -> Option<Case> {
    let mut def = Def::new(Ty::random(rng, 10, 5));
    let (n, c, f) = (
        rng.range(1, 2),
        rng.pick(&[1, 2, 3, 4]),
        rng.pick(&[1, 2, 3, 4, 8, 16]),
    );
    let (kh, kw) = (rng.pick(&[1, 2, 3, 5]), rng.pick(&[1, 2, 3, 5]));
    let (mut h, mut w) = (rng.pick(&SIZES[..9]), rng.pick(&SIZES[..9]));
    let stride = if rng.chance(20) { 2 } else { 1 };
    let explicit = rng.chance(75);
    if !explicit {
        // Inferred output ranges are empty below the filter's size.
        h = h.max(kh);
        w = w.max(kw);
    }
    let (ph, pw) = if explicit {
        (rng.range(0, (kh - 1).min(2)), rng.range(0, (kw - 1).min(2)))
    } else {
        (0, 0)
    };
    let sub = |x: &str, r: &str, p: i64| {
        let s = if stride == 2 { "2*" } else { "" };
        match p {
            0 => format!("{s}{x} + {r}"),
            p => format!("{s}{x} + {r} - {p}"),
        }
    };
    let (hs, ws) = (sub("h", "r", ph), sub("w", "s", pw));
    let range = |x: &str, sym: &str, size: i64| match stride {
        1 => format!("{x} in 0:{sym}"),
        _ => format!("{x} in 0:{}", (size + 1) / 2),
    };
    let wheres = if explicit {
        format!(" where {}, {}", range("h", "H", h), range("w", "W", w))
    } else {
        String::new()
    };
    let (first, channel, points) = match rng.below(10) {
        0..=5 => {
            def.param("In", &[("N", n), ("C", c), ("H", h), ("W", w)]);
            def.param("Wt", &[("F", f), ("C", c), ("KH", kh), ("KW", kw)]);
            let s = format!("(n, f, h, w) +=! In(n, c, {hs}, {ws}) * Wt(f, c, r, s){wheres}");
            (s, "f", n * f * c * h * w * kh * kw)
        }
        6 => {
            def.param("In", &[("N", n), ("C", c), ("H", h), ("W", w)]);
            def.param("Wt", &[("C", c), ("KH", kh), ("KW", kw)]);
            let s = format!("(n, c, h, w) +=! In(n, c, {hs}, {ws}) * Wt(c, r, s){wheres}");
            (s, "c", n * c * h * w * kh * kw)
        }
        7 => {
            def.param("In", &[("N", n), ("C", c), ("W", w)]);
            def.param("Wt", &[("F", f), ("C", c), ("KW", kw)]);
            let wheres = if explicit {
                format!(" where {}", range("w", "W", w))
            } else {
                String::new()
            };
            let s = format!("(n, f, w) +=! In(n, c, {ws}) * Wt(f, c, s){wheres}");
            (s, "f", n * f * c * w * kw)
        }
        _ => {
            // No filter tensor bounds the window: it is fixed by `where`.
            def.param("In", &[("N", n), ("C", c), ("H", h), ("W", w)]);
            let op = if rng.chance(70) { "max=!" } else { "+=!" };
            let (oh, ow) = if stride == 1 {
                ("H".to_string(), "W".to_string())
            } else {
                (((h + 1) / 2).to_string(), ((w + 1) / 2).to_string())
            };
            let s = format!(
                "(n, c, h, w) {op} In(n, c, {hs}, {ws}) where h in 0:{oh}, w in 0:{ow}, r in 0:{kh}, s in 0:{kw}"
            );
            (s, "c", n * c * h * w * kh * kw)
        }
    };
    if points > 4 * MAX_POINTS {
        return None;
    }
    let lhs = &first[..first.find(')').expect("a left side") + 1];
    if rng.chance(25) {
        let size = if channel == "f" { f } else { c };
        let bias = if channel == "f" { "F" } else { "C" };
        def.param("Bias", &[(bias, size)]);
        let relu = format!("O{lhs} = {}(T{lhs} + Bias({channel}), 0)", def.ty.max());
        def.case("convolution", &["O"], &[format!("T{first}"), relu])
    } else {
        def.case("convolution", &["O"], &[format!("O{first}")])
    }
}

fn generate(rng: &mut Rng) -> Case {
    loop {
        let case = match rng.below(20) {
            0..=9 => generic(rng),
            10..=14 => matmul(rng),
            _ => convolution(rng),
        };
        if let Some(case) = case {
            return case;
        }
    }
}

/// Every block of `b`'s nest, `b` first.
fn blocks(b: &Block) -> Vec<&Block> {
    let mut out = vec![b];
    let mut k = 0;
    while k < out.len() {
        let parent = out[k];
        for s in &parent.stmts {
            if let StmtKind::Block(child) = &s.kind {
                out.push(child);
            }
        }
        k += 1;
    }
    out
}

/// The multi-dimensional index of element `flat` of `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (x, &d) in index.iter_mut().zip(shape).rev() {
        *x = flat % d.max(1);
        flat /= d.max(1);
    }
    index
}

/// Builds def `random` for `sizes` (matmuls by the library or not) and runs it
/// twice on one state with `args`: every output must be the interpreter's,
/// or the run must fail where the interpreter failed. `None` if lowering
/// refused the def.
fn compiled(
    library: bool,
    cache: &KernelCache,
    program: &Program,
    sizes: &HashMap<String, i64>,
    args: &HashMap<String, Arg>,
    want: &Result<Vec<(String, Tensor)>, RunError>,
    context: &str,
) -> Option<runtime::Executable> {
    let exe = match runtime::build(program, "random", sizes, &options(library), cache) {
        Ok(exe) => exe,
        Err(runtime::BuildError::Lower(_)) => return None,
        Err(e) => panic!("{context}library {library}: {e}"),
    };
    let mut state = exe.state();
    for run in 0..2 {
        // A parameter that is also a result is updated in place; every run
        // starts from the caller's values.
        for (name, a) in args {
            if let Arg::Tensor(t) = a {
                exe.set_values(&mut state, name, &t.values()).unwrap();
            }
        }
        let ran = exe.run(&mut state, None);
        let want = match want {
            Ok(want) => want,
            Err(e) => {
                assert!(
                    ran.is_err(),
                    "{context}library {library}, run {run}: the interpreter fails ({e}), the compiled def does not"
                );
                continue;
            }
        };
        ran.unwrap_or_else(|e| panic!("{context}library {library}, run {run}: {e}"));
        for (name, t) in want {
            let got = exe.values(&state, name).unwrap();
            let w = t.values();
            assert_eq!(got.len(), w.len(), "{context}`{name}`");
            for (i, (g, x)) in got.iter().zip(&w).enumerate() {
                assert!(
                    close(g, x),
                    "{context}library {library}, run {run}: `{name}`{:?} is {g:?}, want {x:?}",
                    unravel(i, t.shape())
                );
            }
        }
    }
    Some(exe)
}

/// For a `#vector` block: whether its vectors are partial (fewer lanes than
/// a 512-bit register holds, the rest masked off) and whether an index
/// besides the lanes moves along the tensor it writes (jammed with them).
fn vector_kind(b: &Block) -> (bool, bool) {
    let Some(out) = b
        .refs
        .iter()
        .find(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))
    else {
        return (false, false);
    };
    let lanes = u64::from(512 / out.dtype.bits());
    let mut partial = false;
    let mut moving = 0;
    for ix in b
        .idxs
        .iter()
        .filter(|ix| ix.affine.is_none() && ix.range > 1)
    {
        for (a, dim) in out.access.iter().zip(&out.shape) {
            if a.terms.contains_key(&ix.name) {
                moving += 1;
                partial |= dim.stride == 1 && ix.range < lanes;
            }
        }
    }
    (partial, moving > 1)
}

/// What became of one case.
enum Outcome {
    Rejected,
    /// Lowering refused the def (the case, for the report).
    NotLowered(String),
    /// The interpreter failed, and so did the compiled def.
    ProgramError,
    /// Compiled, run and compared; what it exercised.
    Compared(Vec<String>),
}

fn run_case(cache: &KernelCache, case: &Case, seed: u64) -> Outcome {
    let context = format!("case {seed:#x}, sizes {:?}:\n{}", case.sizes, case.source);
    let sizes: HashMap<String, i64> = case.sizes.clone().into_iter().collect();
    let Ok(checked) = tc::check_source_with_sizes(&case.source, &sizes) else {
        return Outcome::Rejected;
    };
    let program = checked.program;
    let d = program.def("random").expect("def random");
    let bound =
        interp::bind_sizes(d, &HashMap::new(), &sizes).unwrap_or_else(|e| panic!("{context}{e}"));
    let mut args = HashMap::new();
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape =
                interp::param_shape(d, t, &bound).unwrap_or_else(|e| panic!("{context}{e}"));
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            let tensor = Tensor::random(dtype, &shape, seed.wrapping_mul(31) + k as u64);
            args.insert(t.clone(), Arg::Tensor(tensor));
        }
    }
    let want = interp::run(&program, "random", &args, &sizes, Mode::Real);
    let Some(exe) = compiled(true, cache, &program, &bound, &args, &want, &context) else {
        return Outcome::NotLowered(context);
    };
    let Ok(outputs) = &want else {
        return Outcome::ProgramError;
    };
    let mut kinds = vec![format!("family {}", case.family)];
    // The C differs without the library only where it took a matmul; the
    // other cases recompile nothing, so a quarter of them is enough.
    if exe.library_steps() > 0 || seed.is_multiple_of(4) {
        compiled(false, cache, &program, &bound, &args, &want, &context)
            .expect("lowered with the library, so without it");
        kinds.push("also without library".to_string());
    }
    for s in &d.stmts {
        if let Stmt::Comp(c) = s {
            let bang = if c.init { "!" } else { "" };
            kinds.push(format!("op {}{bang}", c.op.symbol()));
        }
    }
    let first = d.tensor(&d.outputs[0]).expect("an output").dtype;
    kinds.push(format!("type {first}"));
    let lowered = kernel::lower_def(&program, "random", &bound).expect("lowered once already");
    let vectors: Vec<&Block> = blocks(&exe.block)
        .into_iter()
        .filter(|b| b.tags.contains("vector"))
        .collect();
    let flags = [
        ("two statements", d.stmts.len() > 1),
        // A reduction's reads that fall outside their inputs somewhere
        // become constraints of its block.
        (
            "padded",
            blocks(&lowered).iter().any(|b| !b.constraints.is_empty()),
        ),
        ("rank 4", d.tensors.iter().any(|t| t.shape.len() == 4)),
        (
            "rows of 16 or more",
            outputs
                .iter()
                .any(|(_, t)| t.shape().last().is_some_and(|&w| w >= 16)),
        ),
        ("library matmul", exe.library_steps() > 0),
        ("vector", !vectors.is_empty()),
        ("partial vector", vectors.iter().any(|b| vector_kind(b).0)),
        ("jammed vector", vectors.iter().any(|b| vector_kind(b).1)),
        (
            "vector tail",
            blocks(&exe.block).iter().any(|b| {
                b.tags.contains("tail") && blocks(b).iter().any(|v| v.tags.contains("vector"))
            }),
        ),
    ];
    kinds.extend(
        flags
            .iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| k.to_string()),
    );
    Outcome::Compared(kinds)
}

/// What the cases were and what became of them.
#[derive(Debug, Default)]
struct Tally {
    cases: u64,
    rejected: u64,
    not_lowered: Vec<String>,
    program_errors: u64,
    compared: u64,
    /// Compared cases by what they exercised.
    kinds: BTreeMap<String, u64>,
}

#[test]
fn random_programs_compile_to_what_the_interpreter_computes() {
    let cache = cache("random");
    // Nearly all the time goes to the C compiler, one process per case:
    // run cases on every core.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let next = AtomicU64::new(0);
    let mut outcomes: Vec<(u64, Outcome)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= CASES {
                            return mine;
                        }
                        let seed = SEED + k;
                        let case = generate(&mut Rng::new(seed));
                        mine.push((k, run_case(&cache, &case, seed)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    outcomes.sort_by_key(|(k, _)| *k);
    let mut tally = Tally::default();
    for (_, outcome) in outcomes {
        tally.cases += 1;
        match outcome {
            Outcome::Rejected => tally.rejected += 1,
            Outcome::NotLowered(context) => tally.not_lowered.push(context),
            Outcome::ProgramError => tally.program_errors += 1,
            Outcome::Compared(kinds) => {
                tally.compared += 1;
                for k in kinds {
                    *tally.kinds.entry(k).or_default() += 1;
                }
            }
        }
    }
    println!("{tally:#?}");
    // Rejecting or skipping everything would pass vacuously.
    assert!(
        tally.compared * 10 >= tally.cases * 7,
        "only {} of {} cases compared: {tally:#?}",
        tally.compared,
        tally.cases
    );
    assert!(
        tally.not_lowered.len() <= 2,
        "lowering refused {} cases: {tally:#?}",
        tally.not_lowered.len()
    );
    assert!(
        tally.program_errors >= 1,
        "no case checks that a failing program fails compiled: {tally:#?}"
    );
    let at_least = [
        ("padded", 20),
        ("rank 4", 20),
        ("rows of 16 or more", 20),
        ("library matmul", 15),
        ("two statements", 15),
        ("vector", 30),
        ("partial vector", 5),
        ("vector tail", 5),
        ("jammed vector", 5),
    ];
    for (kind, want) in at_least {
        let got = tally.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            got >= want,
            "{got} cases of {kind}, want {want}: {tally:#?}"
        );
    }
}
