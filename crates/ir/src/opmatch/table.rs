//! The iterator mapping table's input: one statement described neutrally,
//! as iterators with extents and strided accesses whose subscripts are
//! affine in the iterators (OLLIE §4.3.1). Comprehensions
//! (`comprehension.rs`) and the runtime's lowered kernel blocks both
//! produce a [`Table`]; the matchers read nothing else.
//!
//! Requires nothing of its producers beyond the field docs below.
//! Guarantees: an [`Affine`] built by [`Affine::new`] is canonical (terms
//! sorted by iterator, no duplicate iterators, no zero coefficients), so
//! equal forms compare equal; every arithmetic helper is checked and
//! reports overflow as `None` instead of wrapping or panicking.

use std::collections::BTreeMap;
use std::fmt;

/// A subscript `Σ coeff·iterator + constant`, canonical.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Affine {
    /// Iterator and coefficient, sorted by iterator, no zero coefficient.
    pub terms: Vec<(String, i64)>,
    pub constant: i64,
}

impl Affine {
    /// The canonical form of `Σ terms + constant`: repeated iterators are
    /// summed and zero coefficients dropped. `None` if a sum overflows.
    pub fn new<S: Into<String>>(
        terms: impl IntoIterator<Item = (S, i64)>,
        constant: i64,
    ) -> Option<Affine> {
        let mut sum: BTreeMap<String, i64> = BTreeMap::new();
        for (name, coeff) in terms {
            let c = sum.entry(name.into()).or_insert(0);
            *c = c.checked_add(coeff)?;
        }
        Some(Affine {
            terms: sum.into_iter().filter(|(_, c)| *c != 0).collect(),
            constant,
        })
    }

    pub fn constant(c: i64) -> Affine {
        Affine {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// The coefficient of `iter` (0 when absent).
    pub fn coeff(&self, iter: &str) -> i64 {
        self.terms
            .iter()
            .find(|(n, _)| n == iter)
            .map_or(0, |(_, c)| *c)
    }

    pub fn is_const(&self) -> bool {
        self.terms.is_empty()
    }

    /// The only term, when there is exactly one.
    pub fn single(&self) -> Option<(&str, i64)> {
        match self.terms.as_slice() {
            [(n, c)] => Some((n.as_str(), *c)),
            _ => None,
        }
    }

    /// `self + k·other`; `None` on overflow.
    pub fn add_scaled(&self, other: &Affine, k: i64) -> Option<Affine> {
        let scaled = other
            .terms
            .iter()
            .map(|(n, c)| Some((n.clone(), c.checked_mul(k)?)))
            .collect::<Option<Vec<_>>>()?;
        let constant = self.constant.checked_add(other.constant.checked_mul(k)?)?;
        Affine::new(self.terms.iter().cloned().chain(scaled), constant)
    }

    /// `k·self`; `None` on overflow.
    pub fn scale(&self, k: i64) -> Option<Affine> {
        Affine::constant(0).add_scaled(self, k)
    }

    /// The least and greatest value over iterators ranging `0..extent`
    /// (`extent` gives each iterator's extent; an unknown one is `None`).
    /// `None` on overflow or an empty range.
    pub fn interval(&self, extent: &dyn Fn(&str) -> Option<u64>) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (n, c) in &self.terms {
            let last = i64::try_from(extent(n)?.checked_sub(1)?).ok()?;
            let reach = c.checked_mul(last)?;
            if reach < 0 {
                lo = lo.checked_add(reach)?;
            } else {
                hi = hi.checked_add(reach)?;
            }
        }
        Some((lo, hi))
    }
}

impl fmt::Display for Affine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, c) in &self.terms {
            let sign = if *c < 0 { "-" } else { "+" };
            match (first, c.unsigned_abs()) {
                (true, 1) if *c < 0 => write!(f, "-{n}")?,
                (true, 1) => write!(f, "{n}")?,
                (true, a) if *c < 0 => write!(f, "-{a}*{n}")?,
                (true, a) => write!(f, "{a}*{n}")?,
                (false, 1) => write!(f, " {sign} {n}")?,
                (false, a) => write!(f, " {sign} {a}*{n}")?,
            }
            first = false;
        }
        match (first, self.constant) {
            (true, c) => write!(f, "{c}"),
            (false, 0) => Ok(()),
            (false, c) if c < 0 => write!(f, " - {}", c.unsigned_abs()),
            (false, c) => write!(f, " + {c}"),
        }
    }
}

/// One subscript of an access: affine, or the floor quotient of an affine
/// form by a positive constant (a transposed convolution's `th / sh`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subscript {
    Affine(Affine),
    /// `floor(form / divisor)`, `divisor > 1`.
    FloorDiv(Affine, i64),
}

impl Subscript {
    /// The affine form, when the subscript is one.
    pub fn affine(&self) -> Option<&Affine> {
        match self {
            Subscript::Affine(a) => Some(a),
            Subscript::FloorDiv(..) => None,
        }
    }

    /// The form under the division, or the affine form itself.
    pub fn inner(&self) -> &Affine {
        match self {
            Subscript::Affine(a) | Subscript::FloorDiv(a, _) => a,
        }
    }

    /// The divisor (1 for an affine subscript).
    pub fn divisor(&self) -> i64 {
        match self {
            Subscript::Affine(_) => 1,
            Subscript::FloorDiv(_, d) => *d,
        }
    }
}

impl fmt::Display for Subscript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subscript::Affine(a) => write!(f, "{a}"),
            Subscript::FloorDiv(a, d) => write!(f, "({a}) / {d}"),
        }
    }
}

/// One tensor access: `tensor(dims...)` over a strided layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub tensor: String,
    pub dims: Vec<Subscript>,
    /// The extent of each dimension of the tensor (what is in bounds).
    pub sizes: Vec<u64>,
    /// The element stride of each dimension.
    pub strides: Vec<i64>,
    /// The base offset, in elements.
    pub offset: i64,
}

impl Access {
    /// Every dimension's affine form, or the index of the first dimension
    /// that is not affine.
    pub fn affine_dims(&self) -> Result<Vec<&Affine>, usize> {
        self.dims
            .iter()
            .enumerate()
            .map(|(d, s)| s.affine().ok_or(d))
            .collect()
    }

    /// Whether `iter` appears in some dimension.
    pub fn uses(&self, iter: &str) -> bool {
        self.dims.iter().any(|s| s.inner().coeff(iter) != 0)
    }

    /// The dimensions `iter` appears in.
    pub fn dims_of(&self, iter: &str) -> Vec<usize> {
        (0..self.dims.len())
            .filter(|&d| self.dims[d].inner().coeff(iter) != 0)
            .collect()
    }

    /// The flattened element stride of `iter`: Σ over dimensions of
    /// coeff·stride. `None` on overflow or when a dimension the iterator
    /// appears in is not affine.
    pub fn flat_stride(&self, iter: &str) -> Option<i64> {
        let mut s = 0i64;
        for (sub, stride) in self.dims.iter().zip(&self.strides) {
            let c = sub.inner().coeff(iter);
            if c != 0 {
                s = s.checked_add(sub.affine()?.coeff(iter).checked_mul(*stride)?)?;
            }
        }
        Some(s)
    }

    /// The flattened constant offset: the base offset plus Σ over
    /// dimensions of constant·stride. `None` on overflow or when a
    /// dimension is not affine.
    pub fn flat_offset(&self) -> Option<i64> {
        let mut o = self.offset;
        for (sub, stride) in self.dims.iter().zip(&self.strides) {
            o = o.checked_add(sub.affine()?.constant.checked_mul(*stride)?)?;
        }
        Some(o)
    }
}

/// An iterator of the statement, ranging over `0..extent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iter {
    pub name: String,
    pub extent: u64,
}

/// A condition on the iterators under which a point contributes (a
/// guarded reduction `cond ? a * b : 0`): a conjunction of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `form >= 0`.
    NonNegative(Affine),
    /// `form % divisor == 0`, `divisor > 1`.
    Divides(Affine, i64),
}

/// How the statement combines its inputs' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The only input's element itself.
    Read,
    /// A binary operation of the two inputs' elements, in input order.
    Binary(crate::BinOp),
}

/// One statement as OLLIE's iterator mapping table sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub iters: Vec<Iter>,
    pub output: Access,
    pub inputs: Vec<Access>,
    pub combine: Combine,
    /// Whether the statement sums into its output (`+=`, with or without
    /// `!`) rather than assigning (`=`).
    pub reduction: bool,
    /// Points where any condition fails contribute nothing (only for a
    /// reduction).
    pub guard: Vec<Condition>,
}

/// Which tensors an iterator appears in: OLLIE's iterator groups.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Group {
    pub output: bool,
    /// One flag per input, in the table's input order.
    pub inputs: Vec<bool>,
}

impl Group {
    /// The group of the iterators that appear in the output and exactly
    /// the inputs `ins`, of `n` inputs.
    pub fn of(output: bool, ins: &[usize], n: usize) -> Group {
        Group {
            output,
            inputs: (0..n).map(|i| ins.contains(&i)).collect(),
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<String> = Vec::new();
        if self.output {
            names.push("output".to_string());
        }
        for (i, _) in self.inputs.iter().enumerate().filter(|(_, u)| **u) {
            names.push(format!("input {i}"));
        }
        if names.is_empty() {
            f.write_str("{no tensor}")
        } else {
            write!(f, "{{{}}}", names.join(", "))
        }
    }
}

impl Table {
    /// OLLIE's first matching step: the iterators filled into `groups`
    /// (kept in that order, empty ones too), the iterators of any other
    /// group appended as groups of their own, in order of appearance.
    pub fn fill(&self, groups: Vec<Group>) -> Vec<(Group, Vec<String>)> {
        let mut found: Vec<(Group, Vec<String>)> =
            groups.into_iter().map(|g| (g, Vec::new())).collect();
        for it in &self.iters {
            let g = self.group(&it.name);
            match found.iter_mut().find(|(h, _)| *h == g) {
                Some((_, v)) => v.push(it.name.clone()),
                None => found.push((g, vec![it.name.clone()])),
            }
        }
        found
    }

    /// An `Unsupported` mismatch for each access with a dimension that is
    /// not affine (a floor quotient), which the product matchers refuse.
    pub fn non_affine(&self) -> Vec<super::Mismatch> {
        self.accesses()
            .filter_map(|acc| {
                acc.affine_dims().err().map(|d| {
                    super::Mismatch::Unsupported(format!(
                        "dimension {d} of {} is not affine",
                        acc.tensor
                    ))
                })
            })
            .collect()
    }

    /// The tensors `iter` appears in.
    pub fn group(&self, iter: &str) -> Group {
        Group {
            output: self.output.uses(iter),
            inputs: self.inputs.iter().map(|a| a.uses(iter)).collect(),
        }
    }

    /// The extent of `iter`, if it is one of the table's iterators.
    pub fn extent(&self, iter: &str) -> Option<u64> {
        self.iters.iter().find(|i| i.name == iter).map(|i| i.extent)
    }

    /// Every tensor access: the output, then the inputs.
    pub fn accesses(&self) -> impl Iterator<Item = &Access> {
        std::iter::once(&self.output).chain(&self.inputs)
    }
}

/// Row-major strides of a tensor of extents `sizes`; `None` on overflow.
pub fn row_major(sizes: &[u64]) -> Option<Vec<i64>> {
    let mut strides = vec![0i64; sizes.len()];
    let mut s = 1i64;
    for d in (0..sizes.len()).rev() {
        strides[d] = s;
        s = s.checked_mul(i64::try_from(sizes[d]).ok()?)?;
    }
    Some(strides)
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        write!(f, "{}({})", self.tensor, dims.join(", "))
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::NonNegative(a) => write!(f, "{a} >= 0"),
            Condition::Divides(a, k) => write!(f, "({a}) % {k} == 0"),
        }
    }
}

/// The statement in TC-like text, with the iterators' extents: for tests
/// and messages.
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.reduction { "+=" } else { "=" };
        write!(f, "{} {op} ", self.output)?;
        if !self.guard.is_empty() {
            let conds: Vec<String> = self.guard.iter().map(|c| c.to_string()).collect();
            write!(f, "({}) ? ", conds.join(" && "))?;
        }
        match (self.combine, self.inputs.as_slice()) {
            (Combine::Binary(op), [a, b]) => write!(f, "{a} {} {b}", op.symbol())?,
            _ => {
                let ins: Vec<String> = self.inputs.iter().map(|a| a.to_string()).collect();
                write!(f, "{}", ins.join(", "))?;
            }
        }
        if !self.guard.is_empty() {
            f.write_str(" : 0")?;
        }
        let iters: Vec<String> = self
            .iters
            .iter()
            .map(|i| format!("{} in 0:{}", i.name, i.extent))
            .collect();
        write!(f, " where {}", iters.join(", "))
    }
}
