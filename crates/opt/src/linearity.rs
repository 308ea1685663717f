//! Multi-linearity of comprehensions (PET §3): whether a statement's result
//! is a polynomial of degree at most one in every tensor it reads.
//!
//! A comprehension's body is read as a polynomial over its tensor reads
//! ([`Poly`]): `+`, `-`, negation, `*`, division by a value that reads no
//! tensor, and `?:` whose condition reads no tensor (padding, concat)
//! combine polynomials; literals, iterators, sizes, scalars and anything
//! computed from them alone are coefficients. Reductions by `+` (and `=`)
//! keep the result a sum of such polynomials. The statement is multi-linear
//! when no monomial holds one tensor twice: then, all other inputs fixed,
//! the result is linear in each input plus a part that does not depend on
//! it, which is what the equivalence verifier's evaluation over Z_p needs
//! (PET's definition asks for linearity proper; a constant term such as a
//! literal bias is allowed here, since it keeps the degree at one).
//!
//! Everything else is non-linear, with the reason: `max`, `min` and `*`
//! reductions, builtins of tensor values (`fmax`, `exp`, ...), division by
//! a tensor value, comparisons and conditions on tensor values, casts of
//! tensor values (they round), indirect subscripts (a gather is not linear
//! in its index tensor), integer results (they wrap, so they are not
//! polynomials over the integers mod p), and a tensor multiplied by itself.
//!
//! Requires: a def that passes `ir::verify_program`. Guarantees: never
//! panics; the classification depends only on the statement's text.

use std::collections::{BTreeSet, HashMap};

use ir::{BinOp, Comprehension, Def, Expr, Reduction, UnOp};

/// A monomial: the tensors multiplied in it, sorted, with repeats. The
/// coefficient (literals, iterators, sizes) is not tracked.
pub type Monomial = Vec<String>;

/// A polynomial over tensor reads, as its monomials (the empty monomial is
/// a constant term).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Poly {
    pub monomials: BTreeSet<Monomial>,
}

/// More monomials than this in one statement or subprogram are not
/// classified (products of long sums multiply their terms).
const MAX_MONOMIALS: usize = 4096;

impl Poly {
    /// The polynomial of a value that reads no tensor.
    pub fn constant() -> Poly {
        Poly {
            monomials: BTreeSet::from([Vec::new()]),
        }
    }

    /// The polynomial of one tensor's value.
    pub fn tensor(name: &str) -> Poly {
        Poly {
            monomials: BTreeSet::from([vec![name.to_string()]]),
        }
    }

    /// Whether no tensor occurs in it.
    pub fn is_constant(&self) -> bool {
        self.monomials.iter().all(Vec::is_empty)
    }

    /// The sum (or difference: coefficients are not tracked).
    pub fn add(&self, other: &Poly) -> Result<Poly, String> {
        let monomials: BTreeSet<Monomial> =
            self.monomials.union(&other.monomials).cloned().collect();
        if monomials.len() > MAX_MONOMIALS {
            return Err(format!("more than {MAX_MONOMIALS} terms"));
        }
        Ok(Poly { monomials })
    }

    /// The product.
    pub fn mul(&self, other: &Poly) -> Result<Poly, String> {
        if self.monomials.len().saturating_mul(other.monomials.len()) > MAX_MONOMIALS {
            return Err(format!("more than {MAX_MONOMIALS} terms"));
        }
        let mut monomials = BTreeSet::new();
        for a in &self.monomials {
            for b in &other.monomials {
                let mut m: Monomial = a.iter().chain(b).cloned().collect();
                m.sort();
                monomials.insert(m);
            }
        }
        Ok(Poly { monomials })
    }

    /// The polynomial with every monomial's `name` replaced by `by`'s
    /// monomials (a temporary replaced by its definition).
    pub fn substitute(&self, name: &str, by: &Poly) -> Result<Poly, String> {
        let mut out = Poly::default();
        for m in &self.monomials {
            let mut term = Poly::constant();
            for t in m {
                term = if t == name {
                    term.mul(by)?
                } else {
                    term.mul(&Poly::tensor(t))?
                };
            }
            out = out.add(&term)?;
        }
        Ok(out)
    }

    /// The polynomial with its tensors renamed all at once by `to` (a
    /// tensor mapped to `None` becomes a coefficient; one not in `to` stays).
    /// At once, so that swapped names (`X` to `Y`, `Y` to `X`) do not meet.
    pub fn rename(&self, to: &HashMap<&str, Option<&str>>) -> Poly {
        let monomials = self
            .monomials
            .iter()
            .map(|m| {
                let mut renamed: Monomial = m
                    .iter()
                    .filter_map(|t| match to.get(t.as_str()) {
                        Some(by) => by.map(str::to_string),
                        None => Some(t.clone()),
                    })
                    .collect();
                renamed.sort();
                renamed
            })
            .collect();
        Poly { monomials }
    }

    /// A tensor that some monomial holds more than once, if any: the
    /// polynomial is then not multi-linear in it.
    pub fn repeated(&self) -> Option<&str> {
        self.monomials
            .iter()
            .find_map(|m| m.windows(2).find(|w| w[0] == w[1]).map(|w| w[0].as_str()))
    }

    /// Every tensor it reads.
    pub fn tensors(&self) -> BTreeSet<&str> {
        self.monomials
            .iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

/// The polynomial of comprehension `c` of `d` over the tensors it reads,
/// or why it is not one. Its own tensor's earlier values count as a tensor
/// it reads (`O(i) += A(i)` reads `O`). A polynomial may still hold one
/// tensor twice; [`classify`] says whether it is multi-linear.
pub fn polynomial(d: &Def, c: &Comprehension) -> Result<Poly, String> {
    match c.op {
        Reduction::Assign | Reduction::Add => {}
        Reduction::Mul | Reduction::Min | Reduction::Max => {
            return Err(format!("a `{}` reduction", c.op.symbol()));
        }
    }
    let dtype = d.tensor(&c.tensor).map(|t| t.dtype);
    if dtype.is_some_and(|t| !t.is_float()) {
        return Err(format!(
            "an integer result (`{}` wraps, so it is no polynomial mod p)",
            dtype.map_or_else(String::new, |t| t.to_string())
        ));
    }
    let body = Walker { def: d, comp: c }.poly(&c.body)?;
    // `+=` without `!` adds onto the tensor's earlier values.
    if c.op == Reduction::Add && !c.init {
        return body.add(&Poly::tensor(&c.tensor));
    }
    Ok(body)
}

/// Whether comprehension `c` of `d` is multi-linear in the tensors it
/// reads; if not, why.
pub fn classify(d: &Def, c: &Comprehension) -> Result<(), String> {
    let p = polynomial(d, c)?;
    match p.repeated() {
        Some(t) => Err(format!("`{t}` is multiplied by itself")),
        None => Ok(()),
    }
}

struct Walker<'a> {
    def: &'a Def,
    comp: &'a Comprehension,
}

impl Walker<'_> {
    fn poly(&self, e: &Expr) -> Result<Poly, String> {
        let print = || ir::print_expr(self.def, Some(self.comp), e);
        match e {
            Expr::Lit(..) | Expr::Iter(_) | Expr::Sym(_) => Ok(Poly::constant()),
            Expr::Local(name) => match self.comp.lets.iter().find(|(n, _)| n == name) {
                Some((_, v)) => self.poly(v),
                None => Ok(Poly::constant()),
            },
            Expr::Read(t, subscripts) => {
                if subscripts.iter().any(|x| self.reads(x)) {
                    return Err(format!(
                        "an indirect subscript in `{}` (a gather is not linear in its indices)",
                        print()
                    ));
                }
                Ok(Poly::tensor(t))
            }
            Expr::Unary(UnOp::Neg, a) => self.poly(a),
            Expr::Binary(BinOp::Add | BinOp::Sub, a, b) => self.poly(a)?.add(&self.poly(b)?),
            Expr::Binary(BinOp::Mul, a, b) => self.poly(a)?.mul(&self.poly(b)?),
            Expr::Binary(BinOp::Div, a, b) => {
                let den = self.poly(b)?;
                if !den.is_constant() {
                    return Err(format!("a division by a tensor value in `{}`", print()));
                }
                self.poly(a)
            }
            Expr::Select(cond, a, b) => {
                if self.reads(cond) {
                    return Err(format!("a condition on tensor values in `{}`", print()));
                }
                self.poly(a)?.add(&self.poly(b)?)
            }
            Expr::Unary(UnOp::Not, _) | Expr::Binary(..) | Expr::Call(..) | Expr::Cast(..) => {
                self.constant_or(e)
            }
        }
    }

    /// `e` when it reads no tensor (a coefficient); else the reason it is
    /// not linear.
    fn constant_or(&self, e: &Expr) -> Result<Poly, String> {
        if !self.reads(e) {
            return Ok(Poly::constant());
        }
        let what = match e {
            Expr::Call(b, _) => format!("`{}` of a tensor value", b.name()),
            Expr::Cast(t, _) => format!("a cast of a tensor value to {t}"),
            Expr::Binary(op, ..) => format!("`{}` on a tensor value", op.symbol()),
            _ => "a logical operation on a tensor value".to_string(),
        };
        Err(format!(
            "{what} in `{}`",
            ir::print_expr(self.def, Some(self.comp), e)
        ))
    }

    /// Whether `e` reads a tensor, itself or through a let binding.
    fn reads(&self, e: &Expr) -> bool {
        e.any(&|x| match x {
            Expr::Read(..) => true,
            Expr::Local(n) => self.comp.lets.iter().any(|(m, v)| m == n && self.reads(v)),
            _ => false,
        })
    }
}
