//! Mod-p mode: compiling the values of a body as polynomials over Z_p.
//!
//! In [`crate::Mode::ModP`] every numeric value of a body or let is a residue
//! mod `P`: tensor elements, iterators, sizes, scalars and integral literals
//! become residues, and `+ - *` and negation are taken mod `P`; a cast is the
//! identity on residues. What is not a polynomial operation (division,
//! modulo, builtins, a non-integral literal) is an error that names the
//! construct and its location.
//!
//! Conditions (everything of type `bool`) and subscripts are not values:
//! they are compiled with ordinary semantics by `compile.rs`, where reading
//! a tensor is an error. A let can be needed both ways (`t = i + 1` in
//! `A(t) * t`), so [`let_needs`] decides, per let, which versions to compute.

use std::collections::HashMap;

use ir::{BinOp, Comprehension, DType, Expr, UnOp, Value};

use crate::compile::Scope;
use crate::frame::{Frame, ResidueFn, Slot};
use crate::read::ReadPlan;
use crate::residue;

/// Which versions of a let are computed at each point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Need {
    /// As a residue (it is used as a value).
    pub residue: bool,
    /// With ordinary semantics (it is used in a condition or subscript).
    pub real: bool,
}

fn constant<'a>(r: u64) -> ResidueFn<'a> {
    Box::new(move |_| Ok(r))
}

impl<'a> Scope<'a> {
    /// Whether `e` has type `bool` under the IR's typing rules, `let_bool`
    /// telling which lets in scope are `bool`. (`Def::type_of` is not used:
    /// it types a let by typing its definition, which recurses forever on a
    /// let that refers to itself in unverified IR.)
    fn bool_typed(&self, e: &Expr, let_bool: &dyn Fn(&str) -> bool) -> bool {
        match e {
            Expr::Lit(_, t) | Expr::Cast(t, _) => *t == DType::Bool,
            Expr::Iter(_) => false,
            Expr::Sym(n) => self.def.scalar(n) == Some(DType::Bool),
            Expr::Local(n) => let_bool(n),
            Expr::Read(t, _) => self.def.tensor(t).is_some_and(|d| d.dtype == DType::Bool),
            Expr::Unary(UnOp::Not, _) => true,
            Expr::Binary(op, ..) if op.is_comparison() || op.is_logical() => true,
            Expr::Unary(_, a) | Expr::Binary(_, a, _) | Expr::Select(_, a, _) => {
                self.bool_typed(a, let_bool)
            }
            Expr::Call(_, args) => args.first().is_some_and(|a| self.bool_typed(a, let_bool)),
        }
    }

    /// Whether `e` is `bool`, with the lets compiled so far in scope.
    fn is_bool(&self, e: &Expr) -> bool {
        self.bool_typed(e, &|n| {
            matches!(self.lets.get(n).and_then(|l| l.real), Some(Slot::Bool(_)))
        })
    }

    /// Records which lets `e` uses as values and which ordinarily; `value`
    /// says whether `e` itself is in value position.
    fn mark(
        &self,
        e: &Expr,
        value: bool,
        let_bool: &dyn Fn(&str) -> bool,
        uses: &mut Vec<(String, Need)>,
    ) {
        let value = value && (matches!(e, Expr::Read(..)) || !self.bool_typed(e, let_bool));
        let mut mark = |e: &Expr, value: bool| self.mark(e, value, let_bool, uses);
        match e {
            Expr::Local(n) => {
                // Lets may shadow earlier ones; the last binding before the
                // use is the one meant, which `let_needs` resolves by order.
                uses.push((
                    n.clone(),
                    Need {
                        residue: value,
                        real: !value,
                    },
                ));
            }
            Expr::Read(_, subs) => subs.iter().for_each(|s| mark(s, false)),
            Expr::Select(c, a, b) => {
                mark(c, false);
                mark(a, value);
                mark(b, value);
            }
            _ => e.children().into_iter().for_each(|c| mark(c, value)),
        }
    }

    /// Compiles a value-position expression to a residue closure.
    pub(crate) fn residue(&self, e: &Expr) -> Result<ResidueFn<'a>, String> {
        let not_poly =
            |what: &str| format!("{what} is not a polynomial operation{}", self.location());
        Ok(match e {
            // A tensor element is a residue whatever its type (a `bool`
            // tensor holds 0 and 1).
            Expr::Read(name, subs) => {
                let (plan, tensor) = ReadPlan::new(self, name, subs)?;
                // Mod-p mode keeps every tensor as `int64` residues.
                let Some(v) = tensor.as_slice::<i64>() else {
                    return Err(format!(
                        "tensor `{name}` holds {}, but mod-p mode takes residues",
                        tensor.dtype()
                    ));
                };
                Box::new(move |f| Ok(v[plan.offset(f)?] as u64))
            }
            // Every other `bool` is a condition: ordinary semantics, then 0/1.
            _ if self.is_bool(e) => self.condition(e)?,
            Expr::Lit(v, _) => constant(self.literal_residue(*v, "literal")?),
            Expr::Iter(n) => {
                let s = *self
                    .iters
                    .get(n)
                    .ok_or_else(|| format!("iterator `{n}` has no range"))?;
                Box::new(move |f| Ok(residue::from_i64(f.ints[s])))
            }
            Expr::Sym(n) => match (self.scalars.get(n), self.sizes.get(n)) {
                (Some(&v), _) => constant(self.literal_residue(v, &format!("scalar `{n}` ="))?),
                (None, Some(&v)) => constant(residue::from_i64(v)),
                (None, None) => return Err(format!("unknown symbol `{n}`")),
            },
            Expr::Local(n) => {
                let s = self
                    .lets
                    .get(n)
                    .and_then(|l| l.residue)
                    .ok_or_else(|| format!("let `{n}` is used before it is bound"))?;
                Box::new(move |f| Ok(f.residues[s]))
            }
            // `!` is bool, handled above: this is negation.
            Expr::Unary(_, a) => {
                let x = self.residue(a)?;
                Box::new(move |f| Ok(residue::neg(x(f)?)))
            }
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let (x, y) = (self.residue(a)?, self.residue(b)?);
                let op = match op {
                    BinOp::Add => residue::add,
                    BinOp::Sub => residue::sub,
                    _ => residue::mul,
                };
                Box::new(move |f| {
                    let a = x(f)?;
                    Ok(op(a, y(f)?))
                })
            }
            // Comparisons and logic are bool and were handled above; what
            // is left is division and modulo.
            Expr::Binary(op, ..) => return Err(not_poly(&format!("`{}`", op.symbol()))),
            Expr::Select(c, a, b) => {
                let c = self.boolean(c)?;
                let (x, y) = (self.residue(a)?, self.residue(b)?);
                Box::new(move |f| if c(f)? { x(f) } else { y(f) })
            }
            Expr::Call(b, _) => return Err(not_poly(&format!("`{}`", b.name()))),
            Expr::Cast(_, a) => self.residue(a)?,
        })
    }

    /// Evaluates a value-position expression without iterators, lets or
    /// reads (a call's float scalar argument) to its residue.
    pub(crate) fn residue_value(&self, e: &Expr) -> Result<u64, String> {
        let mut f = Frame::default();
        let g = self.residue(e)?;
        g(&mut f).map_err(|_| f.message)
    }

    /// A condition compiled ordinarily, as the residue 0 or 1.
    fn condition(&self, e: &Expr) -> Result<ResidueFn<'a>, String> {
        let g = self.boolean(e)?;
        Ok(Box::new(move |f| Ok(u64::from(g(f)?))))
    }

    /// The residue of a literal or scalar value; `what` introduces it in
    /// the message when it is not an integer.
    fn literal_residue(&self, v: Value, what: &str) -> Result<u64, String> {
        match v {
            Value::Int(i) => Ok(residue::from_i64(i)),
            Value::Bool(b) => Ok(u64::from(b)),
            Value::Float(x) => residue::from_f64(x)
                .ok_or_else(|| format!("not a polynomial: {what} {x:?}{}", self.location())),
        }
    }
}

/// Decides, for each let of `c` in order, whether mod-p mode computes it as
/// a residue, ordinarily, or both. A let nobody uses is still evaluated (its
/// reads may skip a point): as a residue if it reads a tensor, else
/// ordinarily.
pub(crate) fn let_needs(scope: &Scope, c: &Comprehension) -> Vec<Need> {
    // Which lets are bool, as seen by each let (`before[k]`) and the body.
    let mut before = Vec::with_capacity(c.lets.len());
    let mut bools: HashMap<&str, bool> = HashMap::new();
    for (name, e) in &c.lets {
        let b = scope.bool_typed(e, &|n| bools.get(n).copied().unwrap_or(false));
        before.push(bools.clone());
        bools.insert(name, b);
    }
    let mut uses = Vec::new();
    scope.mark(
        &c.body,
        true,
        &|n| bools.get(n).copied().unwrap_or(false),
        &mut uses,
    );
    let mut needs = vec![Need::default(); c.lets.len()];
    // Walking the lets backwards, every use recorded so far comes from the
    // body or a later let, so it refers to this let unless a later let of
    // the same name shadows it (then it was already attributed, below).
    for (k, (name, e)) in c.lets.iter().enumerate().rev() {
        let let_bool = |n: &str| before[k].get(n).copied().unwrap_or(false);
        let mut need = Need::default();
        uses.retain(|(n, u)| {
            if n == name {
                need.residue |= u.residue;
                need.real |= u.real;
                false
            } else {
                true
            }
        });
        if need == Need::default() {
            let reads = e.any(&|x| matches!(x, Expr::Read(..)));
            let is_bool = scope.bool_typed(e, &let_bool);
            need = Need {
                residue: reads && !is_bool,
                real: !reads || is_bool,
            };
        }
        if need.residue {
            scope.mark(e, true, &let_bool, &mut uses);
        }
        if need.real {
            scope.mark(e, false, &let_bool, &mut uses);
        }
        needs[k] = need;
    }
    needs
}
