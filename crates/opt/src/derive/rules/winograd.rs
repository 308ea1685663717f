//! Winograd minimal filtering (Lavin and Gray, "Fast Algorithms for
//! Convolutional Neural Networks"): a stride-1, dilation-1 convolution
//! computed with fewer multiplications. Along a tiled axis, `m` outputs of
//! an `r`-tap correlation come from one tile of `α = m + r - 1` inputs as
//! `Aᵀ [(G g) ⊙ (Bᵀ d)]`: `α` products instead of `m·r`. Over the
//! channels, the products at each of the `α` (or `α²`) transform positions
//! are one matrix product, so the statement becomes
//!
//! - coefficient tables `G`, `Bᵀ`, `Aᵀ` (comprehensions without inputs,
//!   computed once),
//! - the filter transform `U(a…, f, c, k…) +=! W(…) · G(a, r)…`, which
//!   reads only the weight (at load when the weight is a constant),
//! - the image copied into a zero-padded tensor `P` reaching every tile
//!   (a guarded select: the reads the statement's reduction skips as its
//!   padding are zeros there),
//! - the input transform over the tiles, one axis at a time: `T(ah, c, n,
//!   th, tw, iw) +=! P(n, c, m·th + ih, m·tw + iw) · Bᵀ(ah, ih)`, then
//!   `V(ah, aw, c, n, th, tw) +=! T(…, iw) · Bᵀ(aw, iw)`,
//! - the products `M(a…, f, n, t…) +=! U(a…, f, c, k…) · V(a…, c, k…, n,
//!   t…)`, a batched matmul over the transform positions, left open for
//!   operator matching,
//! - the output transform, one axis at a time (two contractions with
//!   `Aᵀ`), then its tiles copied into the original tensor at the
//!   original points only (a last tile reaching past the output writes
//!   nothing there).
//!
//! The forms are the fastest measured in generated C (see [`winograd`]).
//!
//! Offered: `F(2×2, 3×3)` and `F(4×4, 3×3)` for 3×3 kernels,
//! `F(2×2, 5×5)` and `F(4×4, 5×5)` for 5×5 ones, and `F(2, 5)` and
//! `F(4, 5)` along the width for kernels 5 wide (their height summed
//! in the matmul as a channel: `V` then holds one row of the image per
//! kernel row). The matrices are computed from Cook–Toom interpolation
//! points (0, 1, -1, 2, -2, 1/2, -1/2 and ∞) in exact rational arithmetic,
//! and written as `num / den` literals, so that the verifier evaluates
//! them exactly over Z_p.
//!
//! Requires an open `+` reduction whose iterator mapping table matches a
//! 2-D convolution (`ir::opmatch::conv`, any layout it reports, padded or
//! not) with stride and dilation 1, a body that is the product of the
//! image's and the weight's reads, a floating-point output, and each tiled
//! axis's output at least one tile long. Guarantees: the same outputs
//! over exact arithmetic — `Aᵀ[(G g) ⊙ (Bᵀ d)]` is the correlation of `d`
//! with `g` as polynomial identities (Toom–Cook's interpolation,
//! transposed), the tiles cover every output point, and a tile's input
//! outside the image is the padding's zero; in floating point the
//! transforms round differently (F(4×4, 3×3) loses a few bits: see
//! `bench/derive/README.md`).

use std::collections::HashMap;

use ir::opmatch::{self, ConvShape};
use ir::{BinOp, Comprehension, DType, Expr, IterRange, Reduction, Value};

use super::{Applied, Rule};
use crate::derive::scope::rewrite;
use crate::derive::state::{bounds, fresh_iter, iter_range, range, State, Status};
use crate::derive::subscript::{linear, Linear};

pub struct WinogradMinimalFiltering;

/// The finite interpolation points, taken in this order: small magnitudes
/// first keep the transforms' constants (and their rounding) small.
const POINTS: [(i64, i64); 7] = [(0, 1), (1, 1), (-1, 1), (2, 1), (-2, 1), (1, 2), (-1, 2)];

/// A rational number `num / den`, `den > 0`, in lowest terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Q {
    num: i64,
    den: i64,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Q {
    fn new(num: i64, den: i64) -> Option<Q> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Some(Q {
            num: num.checked_div(g)?.checked_mul(s)?,
            den: den.checked_div(g)?.checked_mul(s)?,
        })
    }

    fn int(v: i64) -> Q {
        Q { num: v, den: 1 }
    }

    fn add(self, o: Q) -> Option<Q> {
        Q::new(
            self.num
                .checked_mul(o.den)?
                .checked_add(o.num.checked_mul(self.den)?)?,
            self.den.checked_mul(o.den)?,
        )
    }

    fn mul(self, o: Q) -> Option<Q> {
        Q::new(self.num.checked_mul(o.num)?, self.den.checked_mul(o.den)?)
    }

    fn div(self, o: Q) -> Option<Q> {
        Q::new(self.num.checked_mul(o.den)?, self.den.checked_mul(o.num)?)
    }

    fn neg(self) -> Q {
        Q {
            num: -self.num,
            den: self.den,
        }
    }

    /// The literal `num / den` (or `num`) of type `dtype`: a division by a
    /// literal is exact over Z_p, a rounded decimal would not be.
    fn literal(self, dtype: DType) -> Expr {
        let lit = |v: i64| Expr::Lit(Value::Float(v as f64), dtype);
        if self.den == 1 {
            lit(self.num)
        } else {
            Expr::binary(BinOp::Div, lit(self.num), lit(self.den))
        }
    }
}

/// The matrices of `F(m, r)`: `y = Aᵀ [(G g) ⊙ (Bᵀ d)]` for `y_i = Σ_k
/// g_k d_{i+k}`, `i < m`, over a tile `d` of `α = m + r - 1` inputs.
#[derive(Clone, Debug, PartialEq)]
struct Transform {
    m: usize,
    r: usize,
    /// `m × α`.
    at: Vec<Vec<Q>>,
    /// `α × r`.
    g: Vec<Vec<Q>>,
    /// `α × α`.
    bt: Vec<Vec<Q>>,
}

/// The coefficients of `Π (x - p)` over `points`, lowest degree first.
fn product(points: &[Q]) -> Option<Vec<Q>> {
    let mut c = vec![Q::int(1)];
    for &p in points {
        let mut next = vec![Q::int(0); c.len() + 1];
        for (i, &ci) in c.iter().enumerate() {
            next[i + 1] = next[i + 1].add(ci)?;
            next[i] = next[i].add(ci.mul(p)?.neg())?;
        }
        c = next;
    }
    Some(c)
}

/// Toom–Cook's `F(m, r)` from the first `m + r - 2` of [`POINTS`] and ∞.
/// The polynomial product `s = g·h` (degrees `r - 1` and `m - 1`) is
/// evaluated at the points (∞ gives the leading coefficient) and
/// interpolated: `s = Σ_j s(p_j) L_j + s_∞ Π (x - p_l)`. The correlation
/// is that algorithm transposed: `Aᵀ` evaluates `h`'s basis (`p_j^i`),
/// `G` evaluates `g` divided by `L_j`'s denominator `Π_{l≠j} (p_j - p_l)`,
/// and `Bᵀ`'s rows are the numerators `Π_{l≠j} (x - p_l)` and `Π (x - p_l)`.
fn transform(m: usize, r: usize) -> Option<Transform> {
    let alpha = m + r - 1;
    if m == 0 || r == 0 || alpha - 1 > POINTS.len() {
        return None;
    }
    let points: Vec<Q> = POINTS[..alpha - 1]
        .iter()
        .map(|&(n, d)| Q::new(n, d))
        .collect::<Option<_>>()?;
    let pow = |p: Q, e: usize| (0..e).try_fold(Q::int(1), |acc, _| acc.mul(p));
    let mut at = vec![vec![Q::int(0); alpha]; m];
    for (i, row) in at.iter_mut().enumerate() {
        for (j, &p) in points.iter().enumerate() {
            row[j] = pow(p, i)?;
        }
        row[alpha - 1] = Q::int(i64::from(i == m - 1));
    }
    let mut g = vec![vec![Q::int(0); r]; alpha];
    let mut bt = vec![vec![Q::int(0); alpha]; alpha];
    for (j, &p) in points.iter().enumerate() {
        let others: Vec<Q> = points
            .iter()
            .enumerate()
            .filter(|&(l, _)| l != j)
            .map(|(_, &q)| q)
            .collect();
        let denominator = others
            .iter()
            .try_fold(Q::int(1), |acc, &q| acc.mul(p.add(q.neg())?))?;
        for (k, gk) in g[j].iter_mut().enumerate() {
            *gk = pow(p, k)?.div(denominator)?;
        }
        for (i, &c) in product(&others)?.iter().enumerate() {
            bt[j][i] = c;
        }
    }
    g[alpha - 1][r - 1] = Q::int(1);
    bt[alpha - 1] = product(&points)?;
    Some(Transform { m, r, at, g, bt })
}

/// What the rule writes for a convolution.
#[derive(Clone, Debug)]
enum Plan {
    /// `F(m×m, r×r)`: both spatial axes tiled.
    Square(Transform),
    /// `F(m, r)` along the width; the kernel's rows are summed in the
    /// matmul beside the channels.
    Width(Transform),
}

/// The plans offered for kernel extents `(kh, kw)`.
fn plans(kh: u64, kw: u64) -> Vec<Plan> {
    let mut out = Vec::new();
    if kh == 3 && kw == 3 {
        out.extend(
            [2, 4]
                .into_iter()
                .filter_map(|m| transform(m, 3).map(Plan::Square)),
        );
    }
    if kh == 5 && kw == 5 {
        out.extend(
            [2, 4]
                .into_iter()
                .filter_map(|m| transform(m, 5).map(Plan::Square)),
        );
    }
    if kw == 5 {
        out.extend(
            [2, 4]
                .into_iter()
                .filter_map(|m| transform(m, 5).map(Plan::Width)),
        );
    }
    out
}

/// An iterator's range as `(lo, extent)`.
fn span(c: &Comprehension, name: &str) -> Option<(i64, i64)> {
    range(c, name).map(|(lo, hi)| (lo, hi - lo))
}

/// The coefficient table `rows × cols` as a comprehension without inputs:
/// a select on the row, then on the column, zeros left out.
fn table(name: &str, entries: &[Vec<Q>], dtype: DType) -> Comprehension {
    let zero = Expr::Lit(Value::Float(0.0), dtype);
    let is = |it: &str, v: usize| {
        Expr::binary(BinOp::Eq, Expr::Iter(it.to_string()), Expr::int(v as i64))
    };
    let mut body = zero.clone();
    for (i, row) in entries.iter().enumerate().rev() {
        let mut value = zero.clone();
        for (j, q) in row.iter().enumerate().rev() {
            if q.num != 0 {
                value = Expr::Select(
                    Box::new(is("j", j)),
                    Box::new(q.literal(dtype)),
                    Box::new(value),
                );
            }
        }
        body = Expr::Select(Box::new(is("i", i)), Box::new(value), Box::new(body));
    }
    let cols = entries.first().map_or(0, Vec::len) as i64;
    Comprehension {
        tensor: name.to_string(),
        indices: vec!["i".to_string(), "j".to_string()],
        op: Reduction::Assign,
        init: false,
        body,
        ranges: vec![
            iter_range("i", 0, entries.len() as i64),
            iter_range("j", 0, cols),
        ],
        lets: Vec::new(),
        exists: Vec::new(),
    }
}

fn iter(n: &str) -> Expr {
    Expr::Iter(n.to_string())
}

fn read(t: &str, ix: Vec<Expr>) -> Expr {
    Expr::Read(t.to_string(), ix)
}

fn mul(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Mul, a, b)
}

/// `name + k` as a substitution's target.
fn shifted(name: &str, k: i64) -> Option<Linear> {
    Linear::iter(name).plus(&Linear::constant(k))
}

/// A `+=!` statement over `ranges` (the left-hand side's first) whose
/// body's original iterators are replaced by `to`.
fn scope(
    tensor: &str,
    indices: &[String],
    body: Expr,
    ranges: Vec<IterRange>,
    to: &HashMap<String, Linear>,
) -> Comprehension {
    let mut c = Comprehension {
        tensor: tensor.to_string(),
        indices: indices.to_vec(),
        op: Reduction::Add,
        init: true,
        body,
        ranges,
        lets: Vec::new(),
        exists: Vec::new(),
    };
    rewrite(&mut c, to);
    order_reductions(&mut c);
    c
}

/// The reduction iterators' ranges in order of first appearance in the
/// body, as a checked program has them (so the printed text reads back as
/// the same statement).
fn order_reductions(c: &mut Comprehension) {
    fn visit(e: &Expr, seen: &mut Vec<String>) {
        if let Expr::Iter(n) = e {
            if !seen.contains(n) {
                seen.push(n.clone());
            }
        }
        for k in e.children() {
            visit(k, seen);
        }
    }
    let mut seen = Vec::new();
    visit(&c.body, &mut seen);
    let lhs = c.indices.len();
    let key = |r: &IterRange| seen.iter().position(|n| *n == r.name).unwrap_or(usize::MAX);
    if let Some(sums) = c.ranges.get_mut(lhs..) {
        sums.sort_by_key(key);
    }
}

/// The roles' iterators of a matched convolution, with `(lo, extent)`.
struct Roles {
    n: (String, i64, i64),
    f: (String, i64, i64),
    c: (String, i64, i64),
    /// Output and kernel iterator per spatial axis (height, width).
    out: [(String, i64, i64); 2],
    ker: [(String, i64, i64); 2],
}

fn roles(c: &Comprehension, s: &ConvShape) -> Option<Roles> {
    let role = |r: &opmatch::Role| {
        let (lo, ext) = span(c, &r.iter)?;
        Some((r.iter.clone(), lo, ext))
    };
    Some(Roles {
        n: role(&s.n)?,
        f: role(&s.f)?,
        c: role(&s.c)?,
        out: [role(&s.oh)?, role(&s.ow)?],
        ker: [role(&s.kh)?, role(&s.kw)?],
    })
}

impl Rule for WinogradMinimalFiltering {
    fn name(&self) -> &'static str {
        "Winograd minimal filtering"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        if state.status[at] != Status::Open || c.op != Reduction::Add || !c.exists.is_empty() {
            return;
        }
        let Some(dtype) = state.dtype(&c.tensor).filter(|t| t.is_float()) else {
            return;
        };
        let Ok(t) = opmatch::table(&state.def, c) else {
            return;
        };
        let Ok(shape) = opmatch::conv(&t) else {
            return;
        };
        if shape.stride != [1, 1] || shape.dilation != [1, 1] {
            return;
        }
        let (Some(image), Some(weight)) = (t.inputs.get(shape.input), t.inputs.get(shape.weight))
        else {
            return;
        };
        // The body must be the two reads' product and nothing else (a
        // guard restating the image's bounds is left alone).
        let Expr::Binary(BinOp::Mul, a, b) = &c.body else {
            return;
        };
        let (x_read, w_read) = match (a.as_ref(), b.as_ref()) {
            (Expr::Read(p, _), Expr::Read(q, _)) if *p == image.tensor && *q == weight.tensor => {
                (a.as_ref(), b.as_ref())
            }
            (Expr::Read(p, _), Expr::Read(q, _)) if *p == weight.tensor && *q == image.tensor => {
                (b.as_ref(), a.as_ref())
            }
            _ => return,
        };
        if image.tensor == weight.tensor || image.tensor == c.tensor || weight.tensor == c.tensor {
            return;
        }
        let Some(roles) = roles(c, &shape) else {
            return;
        };
        let Some(image_shape) = state.shape(&image.tensor) else {
            return;
        };
        let parts = Parts {
            dtype,
            roles: &roles,
            x_read,
            w_read,
            image_shape: &image_shape,
        };
        for plan in plans(shape.kh.extent, shape.kw.extent) {
            if let Some(a) = winograd(state, at, &parts, &plan) {
                out.push(a);
            }
        }
    }
}

/// What [`winograd`] rewrites: the matched convolution's parts.
struct Parts<'a> {
    dtype: DType,
    roles: &'a Roles,
    x_read: &'a Expr,
    w_read: &'a Expr,
    image_shape: &'a [i64],
}

/// `Σ k·name + constant` as a canonical subscript.
fn affine(terms: &[(&str, i64)], constant: i64) -> Option<Expr> {
    let mut l = Linear::constant(constant);
    for &(n, k) in terms {
        l = l.plus(&Linear::iter(n).scale(k)?)?;
    }
    Some(l.to_expr())
}

/// The state with statement `at` computed by `plan`; `None` when the
/// output is shorter than a tile along a tiled axis, or the kernel is not
/// the plan's.
///
/// The transforms are separable contractions with the coefficient tables,
/// one axis at a time, and the image is first copied into a zero-padded
/// tensor: measured on conv3x3's F(2×2, 3×3) in generated C, the input
/// transform took 2.8 ms as one reduction over both taps skipping reads
/// outside the image, 9.0 ms with the coefficients as selects on the
/// iterators, 0.23 ms as two stages and 0.13 ms as two stages over the
/// padded copy; the output transform 0.77 ms as one reduction over both
/// positions, 0.05 ms as two contractions (which the runtime runs as
/// matmuls) and a copy into the output.
fn winograd(state: &State, at: usize, parts: &Parts, plan: &Plan) -> Option<Applied> {
    let c = state.comp(at);
    let (tr, square) = match plan {
        Plan::Square(t) => (t, true),
        Plan::Width(t) => (t, false),
    };
    let roles = parts.roles;
    let dtype = parts.dtype;
    let (m, r) = (tr.m as i64, tr.r as i64);
    let alpha = m + r - 1;
    let (n, f, ch) = (&roles.n, &roles.f, &roles.c);
    let [oh, ow] = &roles.out;
    let [kh, kw] = &roles.ker;
    if ow.2 < m || kw.2 != r || (square && (oh.2 < m || kh.2 != r)) {
        return None;
    }
    let tiles = |e: i64| (e + m - 1) / m;
    // New iterators, named apart from every original one: the substituted
    // reads keep the roles' names.
    let mut taken: Vec<String> = Vec::new();
    let mut pick = |base: &str| {
        let mut k = 0;
        loop {
            let want = if k == 0 {
                base.to_string()
            } else {
                format!("{base}{k}")
            };
            let name = fresh_iter(c, &want);
            if !taken.contains(&name) {
                taken.push(name.clone());
                return name;
            }
            k += 1;
        }
    };
    let [ah, aw, rh, rw, ih, iw, th, tw, ph, pw, y, x] = [
        "ah", "aw", "rh", "rw", "ih", "iw", "th", "tw", "ph", "pw", "y", "x",
    ]
    .map(&mut pick);
    let rows = if square {
        tiles(oh.2) * m + r - 1
    } else {
        oh.2 + kh.2 - 1
    };
    let cols = tiles(ow.2) * m + r - 1;
    let ext: HashMap<String, i64> = [
        (ah.clone(), alpha),
        (aw.clone(), alpha),
        (rh.clone(), r),
        (rw.clone(), r),
        (ih.clone(), alpha),
        (iw.clone(), alpha),
        (th.clone(), tiles(oh.2)),
        (tw.clone(), tiles(ow.2)),
        (ph.clone(), m),
        (pw.clone(), m),
        (y.clone(), rows),
        (x.clone(), cols),
        (n.0.clone(), n.2),
        (f.0.clone(), f.2),
        (ch.0.clone(), ch.2),
        (kh.0.clone(), kh.2),
        (oh.0.clone(), oh.2),
    ]
    .into_iter()
    .collect();
    let mut next = state.clone();
    let mut stmts: Vec<(Comprehension, Status)> = Vec::new();
    // A `+=!` scope `tensor(idx) +=! body` summing `sums`, every iterator
    // from 0, the original iterators in `body` replaced by `to`.
    let add = |next: &mut State,
               stmts: &mut Vec<(Comprehension, Status)>,
               idx: &[&String],
               sums: &[&String],
               body: Expr,
               to: &HashMap<String, Linear>,
               status: Status|
     -> Option<String> {
        let shape: Vec<i64> = idx
            .iter()
            .map(|i| ext.get(*i).copied())
            .collect::<Option<_>>()?;
        let t = next.fresh_tensor(dtype, &shape);
        let names: Vec<String> = idx.iter().map(|s| s.to_string()).collect();
        let ranges = idx
            .iter()
            .chain(sums)
            .map(|i| Some(iter_range(i, 0, *ext.get(*i)?)))
            .collect::<Option<Vec<_>>>()?;
        stmts.push((scope(&t, &names, body, ranges, to), status));
        Some(t)
    };
    let none = HashMap::new();
    let g = next.fresh_tensor(dtype, &[alpha, r]);
    let bt = next.fresh_tensor(dtype, &[alpha, alpha]);
    let at_t = next.fresh_tensor(dtype, &[m, alpha]);
    let mut tables = Vec::new();
    for (name, entries) in [(&g, &tr.g), (&bt, &tr.bt), (&at_t, &tr.at)] {
        tables.push((table(name, entries, dtype), Status::EOperator));
    }
    let coeff = |t: &str, a: &str, b: &str| read(t, vec![iter(a), iter(b)]);
    let shift = |r: &(String, i64, i64), to: &str| Some((r.0.clone(), shifted(to, r.1)?));

    // U, the filter transform: reads only the weight and `G`.
    let mut w_to: HashMap<String, Linear> = [shift(f, &f.0)?, shift(ch, &ch.0)?, shift(kw, &rw)?]
        .into_iter()
        .collect();
    let u = if square {
        w_to.extend([shift(kh, &rh)?]);
        let body = mul(
            mul(parts.w_read.clone(), coeff(&g, &ah, &rh)),
            coeff(&g, &aw, &rw),
        );
        add(
            &mut next,
            &mut stmts,
            &[&ah, &aw, &f.0, &ch.0],
            &[&rh, &rw],
            body,
            &w_to,
            Status::EOperator,
        )?
    } else {
        w_to.extend([shift(kh, &kh.0)?]);
        let body = mul(parts.w_read.clone(), coeff(&g, &aw, &rw));
        add(
            &mut next,
            &mut stmts,
            &[&aw, &f.0, &ch.0, &kh.0],
            &[&rw],
            body,
            &w_to,
            Status::EOperator,
        )?
    };

    // P, the image zero-padded to the tiles' reach: row `y` is the row the
    // first output row's first kernel row reads, plus `y`.
    let p = next.fresh_tensor(dtype, &[n.2, ch.2, rows, cols]);
    let x_to: HashMap<String, Linear> = [
        shift(n, &n.0)?,
        shift(ch, &ch.0)?,
        (oh.0.clone(), shifted(&y, oh.1 + kh.1)?),
        (kh.0.clone(), Linear::constant(0)),
        (ow.0.clone(), shifted(&x, ow.1 + kw.1)?),
        (kw.0.clone(), Linear::constant(0)),
    ]
    .into_iter()
    .collect();
    let mut pad = Comprehension {
        tensor: p.clone(),
        indices: vec![n.0.clone(), ch.0.clone(), y.clone(), x.clone()],
        op: Reduction::Assign,
        init: false,
        body: parts.x_read.clone(),
        ranges: vec![
            iter_range(&n.0, 0, n.2),
            iter_range(&ch.0, 0, ch.2),
            iter_range(&y, 0, rows),
            iter_range(&x, 0, cols),
        ],
        lets: Vec::new(),
        exists: Vec::new(),
    };
    rewrite(&mut pad, &x_to);
    // The reads outside the image are the padding's zeros.
    let Expr::Read(_, subs) = &pad.body else {
        return None;
    };
    let snapshot = pad.clone();
    let b = bounds(&snapshot);
    let subs = subs.clone();
    let mut guard: Option<Expr> = None;
    for (e, &size) in subs.iter().zip(parts.image_shape) {
        let (lo, hi) = linear(e, &HashMap::new())?.interval(&b)?;
        let mut tests = Vec::new();
        if lo < 0 {
            tests.push(Expr::binary(BinOp::Ge, e.clone(), Expr::int(0)));
        }
        if hi >= size {
            tests.push(Expr::binary(BinOp::Lt, e.clone(), Expr::int(size)));
        }
        for t in tests {
            guard = Some(match guard {
                Some(g) => Expr::binary(BinOp::And, g, t),
                None => t,
            });
        }
    }
    if let Some(cond) = guard {
        let body = std::mem::replace(&mut pad.body, Expr::int(0));
        pad.body = Expr::Select(
            Box::new(cond),
            Box::new(body),
            Box::new(Expr::Lit(Value::Float(0.0), dtype)),
        );
    }
    stmts.push((pad, Status::EOperator));

    // V, the input transform over the tiles, one axis at a time.
    let v = if square {
        let body = mul(
            read(
                &p,
                vec![
                    iter(&n.0),
                    iter(&ch.0),
                    affine(&[(&th, m), (&ih, 1)], 0)?,
                    affine(&[(&tw, m), (&iw, 1)], 0)?,
                ],
            ),
            coeff(&bt, &ah, &ih),
        );
        let t1 = add(
            &mut next,
            &mut stmts,
            &[&ah, &ch.0, &n.0, &th, &tw, &iw],
            &[&ih],
            body,
            &none,
            Status::EOperator,
        )?;
        let body = mul(
            read(
                &t1,
                [&ah, &ch.0, &n.0, &th, &tw, &iw].map(|i| iter(i)).to_vec(),
            ),
            coeff(&bt, &aw, &iw),
        );
        add(
            &mut next,
            &mut stmts,
            &[&ah, &aw, &ch.0, &n.0, &th, &tw],
            &[&iw],
            body,
            &none,
            Status::EOperator,
        )?
    } else {
        let body = mul(
            read(
                &p,
                vec![
                    iter(&n.0),
                    iter(&ch.0),
                    affine(&[(&oh.0, 1), (&kh.0, 1)], 0)?,
                    affine(&[(&tw, m), (&iw, 1)], 0)?,
                ],
            ),
            coeff(&bt, &aw, &iw),
        );
        add(
            &mut next,
            &mut stmts,
            &[&aw, &ch.0, &kh.0, &n.0, &oh.0, &tw],
            &[&iw],
            body,
            &none,
            Status::EOperator,
        )?
    };

    // M, the products: a batched matmul over the transform positions,
    // left open for operator matching.
    let all = |v: &[&String]| v.iter().map(|i| iter(i)).collect::<Vec<_>>();
    let mm = if square {
        let body = mul(
            read(&u, all(&[&ah, &aw, &f.0, &ch.0])),
            read(&v, all(&[&ah, &aw, &ch.0, &n.0, &th, &tw])),
        );
        add(
            &mut next,
            &mut stmts,
            &[&ah, &aw, &f.0, &n.0, &th, &tw],
            &[&ch.0],
            body,
            &none,
            Status::Open,
        )?
    } else {
        let body = mul(
            read(&u, all(&[&aw, &f.0, &ch.0, &kh.0])),
            read(&v, all(&[&aw, &ch.0, &kh.0, &n.0, &oh.0, &tw])),
        );
        add(
            &mut next,
            &mut stmts,
            &[&aw, &f.0, &n.0, &oh.0, &tw],
            &[&ch.0, &kh.0],
            body,
            &none,
            Status::Open,
        )?
    };

    // The output transform, one axis at a time, then the tiles copied into
    // the original tensor at its own points.
    let from0 = |r: &(String, i64, i64)| shifted(&r.0, -r.1);
    let ob = bounds(c);
    let within = |r: &(String, i64, i64)| Some(from0(r)?.floor_mod(m, &ob)?.to_expr());
    let tile_of = |r: &(String, i64, i64)| Some(from0(r)?.floor_div(m, &ob)?.to_expr());
    let out_read = if square {
        let body = mul(
            coeff(&at_t, &ph, &ah),
            read(&mm, all(&[&ah, &aw, &f.0, &n.0, &th, &tw])),
        );
        let y1 = add(
            &mut next,
            &mut stmts,
            &[&ph, &aw, &f.0, &n.0, &th, &tw],
            &[&ah],
            body,
            &none,
            Status::EOperator,
        )?;
        let body = mul(
            read(&y1, all(&[&ph, &aw, &f.0, &n.0, &th, &tw])),
            coeff(&at_t, &pw, &aw),
        );
        let y2 = add(
            &mut next,
            &mut stmts,
            &[&ph, &pw, &f.0, &n.0, &th, &tw],
            &[&aw],
            body,
            &none,
            Status::EOperator,
        )?;
        read(
            &y2,
            vec![
                within(oh)?,
                within(ow)?,
                from0(f)?.to_expr(),
                from0(n)?.to_expr(),
                tile_of(oh)?,
                tile_of(ow)?,
            ],
        )
    } else {
        let body = mul(
            coeff(&at_t, &pw, &aw),
            read(&mm, all(&[&aw, &f.0, &n.0, &oh.0, &tw])),
        );
        let y1 = add(
            &mut next,
            &mut stmts,
            &[&pw, &f.0, &n.0, &oh.0, &tw],
            &[&aw],
            body,
            &none,
            Status::EOperator,
        )?;
        read(
            &y1,
            vec![
                within(ow)?,
                from0(f)?.to_expr(),
                from0(n)?.to_expr(),
                from0(oh)?.to_expr(),
                tile_of(ow)?,
            ],
        )
    };
    let o = Comprehension {
        tensor: c.tensor.clone(),
        indices: c.indices.clone(),
        // `+=!` over the box assigns it; `+=` adds onto what is there.
        op: if c.init {
            Reduction::Assign
        } else {
            Reduction::Add
        },
        init: false,
        body: out_read,
        ranges: c
            .indices
            .iter()
            .filter_map(|i| c.range(i).cloned())
            .collect(),
        lets: Vec::new(),
        exists: Vec::new(),
    };
    stmts.push((o, Status::EOperator));

    let name = if square {
        format!("F({0}×{0}, {1}×{1})", tr.m, tr.r)
    } else {
        format!("F({}, {}) along the width", tr.m, tr.r)
    };
    let batch = if square { alpha * alpha } else { alpha };
    tables.extend(stmts);
    next.splice(at, tables);
    Some(Applied {
        state: next,
        what: format!(
            "`{}`: Winograd {name}: filter transform `{u}`, input transform `{v}`, products `{mm}` ({batch} matmuls)",
            c.tensor
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Aᵀ [(G g) ⊙ (Bᵀ d)]` equals the direct correlation exactly, for
    /// every offered transform, on integer data.
    #[test]
    fn transforms_compute_the_correlation() {
        for (m, r) in [(2, 3), (4, 3), (2, 5), (4, 5)] {
            let t = transform(m, r).expect("the transform exists");
            let alpha = m + r - 1;
            for seed in 0..5i64 {
                let d: Vec<Q> = (0..alpha as i64)
                    .map(|i| Q::int((i * 7 + seed * 3) % 11 - 5))
                    .collect();
                let g: Vec<Q> = (0..r as i64)
                    .map(|k| Q::int((k * 5 + seed) % 7 - 3))
                    .collect();
                let dot = |row: &[Q], v: &[Q]| {
                    row.iter()
                        .zip(v)
                        .try_fold(Q::int(0), |acc, (&a, &b)| acc.add(a.mul(b)?))
                        .expect("no overflow")
                };
                let gg: Vec<Q> = t.g.iter().map(|row| dot(row, &g)).collect();
                let dd: Vec<Q> = t.bt.iter().map(|row| dot(row, &d)).collect();
                let prod: Vec<Q> = gg
                    .iter()
                    .zip(&dd)
                    .map(|(&a, &b)| a.mul(b).expect("no overflow"))
                    .collect();
                for i in 0..m {
                    let direct = dot(&g, &d[i..i + r]);
                    assert_eq!(dot(&t.at[i], &prod), direct, "F({m}, {r}), output {i}");
                }
            }
        }
    }

    /// Lavin's F(2, 3) up to the sign of one row of `G` and of `Bᵀ` (the
    /// product is the same): a hand-checked instance.
    #[test]
    fn f23_is_lavins() {
        let t = transform(2, 3).expect("F(2, 3)");
        let q = |n, d| Q::new(n, d).expect("rational");
        assert_eq!(t.at[0], vec![q(1, 1), q(1, 1), q(1, 1), q(0, 1)]);
        assert_eq!(t.at[1], vec![q(0, 1), q(1, 1), q(-1, 1), q(1, 1)]);
        assert_eq!(t.g[1], vec![q(1, 2), q(1, 2), q(1, 2)]);
        assert_eq!(t.g[0], vec![q(-1, 1), q(0, 1), q(0, 1)]);
        assert_eq!(t.bt[0], vec![q(-1, 1), q(0, 1), q(1, 1), q(0, 1)]);
        assert_eq!(t.bt[3], vec![q(0, 1), q(-1, 1), q(0, 1), q(1, 1)]);
    }
}
