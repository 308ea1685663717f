//! The mutant generator (PET §4.1, Algorithm 1, over operator templates):
//! for one operator application, every program of the form
//! `post(op'(pre(x), ...))` up to the mutation depth whose inputs and
//! output have the original's shapes — `pre` a compound layout
//! ([`super::layout`]) of each data input, `op'` an operator of the
//! original's family with attributes that follow the axes the layouts
//! moved, `post` the compound undoing `pre` on the result.
//!
//! Operator templates are data ([`TEMPLATES`]): which operators form a
//! family (their bodies are the same contraction over transposed
//! operands), which argument is a weight (its layout is folded at load,
//! so it does not count towards the depth) and how attributes follow
//! layouts. Layout steps are generated from the shapes: moves of a whole
//! axis or of a factor that divides it and is one of the operator's
//! strides or dilations, and swaps of two axes.
//!
//! Requires the operator's arguments at concrete values. Guarantees:
//! every returned spec is shape-valid (its def's output has the
//! original's shape, checked by the operator's signature), specs are
//! distinct by their canonical text, and none is the original itself.
//! Nothing here says a mutant is equivalent: `super::check` decides.

use std::collections::HashSet;

use ir::Program;

use super::layout::{self, Layout};
use super::{Arg, Spec};
use crate::signature::{call_shapes, ArgKind};

/// An operator family and how its applications mutate.
#[derive(Debug)]
pub struct Template {
    /// The operators of the family.
    pub ops: &'static [&'static str],
    pub kind: Kind,
}

/// How a family's attributes follow layouts.
#[derive(Debug)]
pub enum Kind {
    /// Products over the last two axes (`matmul`, `matmul_ta`, ...):
    /// operands may trade places and each, as the result, be transposed.
    Products { rank: usize },
    /// 2-D convolutions `conv2d(X, Wt, sh, sw, ph0, pw0, ph1, pw1, dh, dw,
    /// G)`: the data input's layouts move batch, channels and spatial
    /// axes; a spatial axis whose every `d`-th element moved out loses
    /// dilation `d` (and its pads shrink by `d`), swapped spatial axes
    /// swap their attributes and the kernel's axes, and batch (or bands
    /// of rows or columns) moved into channels multiplies the groups with
    /// the filters repeated.
    Conv2d,
}

/// The templates the generator knows.
pub const TEMPLATES: &[Template] = &[
    Template {
        ops: &["matmul", "matmul_ta", "matmul_tb", "matmul_tab"],
        kind: Kind::Products { rank: 2 },
    },
    Template {
        ops: &["batch_matmul", "batch_matmul_tb"],
        kind: Kind::Products { rank: 3 },
    },
    Template {
        ops: &["conv2d"],
        kind: Kind::Conv2d,
    },
];

/// The template of operator `op`, if any.
pub fn template(op: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.ops.contains(&op))
}

/// One input of a mutant: which original argument, and its layout.
#[derive(Clone, Debug)]
struct Input {
    arg: usize,
    steps: Vec<Layout>,
}

/// A mutant before it is written: the operator, its arguments (inputs or
/// attributes) and the layout of the result.
#[derive(Clone, Debug)]
struct Draft {
    op: &'static str,
    inputs: Vec<Input>,
    attrs: Vec<Arg>,
    post: Vec<Layout>,
    depth: usize,
    what: String,
}

/// Every shape-valid mutant of `op(args)` up to `depth` operators, as
/// specs named `{prefix}{k}`.
pub fn mutants(program: &Program, op: &str, args: &[Arg], depth: usize, prefix: &str) -> Vec<Spec> {
    let Some(t) = template(op) else {
        return Vec::new();
    };
    let Some(shape) = output_shape(program, op, args) else {
        return Vec::new();
    };
    let drafts = match t.kind {
        Kind::Products { rank } => products(t, args, rank),
        Kind::Conv2d => conv2d(args),
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for d in drafts {
        if d.depth > depth || is_original(&d, op, args) {
            continue;
        }
        let Some(text) = write(program, args, &d, &shape, "{name}") else {
            continue;
        };
        if !seen.insert(text.clone()) {
            continue;
        }
        let name = format!("{prefix}{}", out.len() + 1);
        out.push(Spec {
            text: text.replace("{name}", &name),
            name,
            description: d.what,
        });
    }
    out
}

/// Whether draft `d` is `op(args)` itself.
fn is_original(d: &Draft, op: &str, args: &[Arg]) -> bool {
    let tensors = args
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Arg::Tensor(_)));
    d.op == op
        && d.post.is_empty()
        && d.attrs == attrs_of(args)
        && d.inputs.len() == tensors.clone().count()
        && d.inputs
            .iter()
            .zip(tensors)
            .all(|(i, (k, _))| i.arg == k && i.steps.is_empty())
}

/// The shape of `op(args)`.
fn output_shape(program: &Program, op: &str, args: &[Arg]) -> Option<Vec<i64>> {
    let def = program.def(op)?;
    let kinds: Vec<ArgKind> = args.iter().map(Arg::kind).collect();
    let mut shapes = call_shapes(def, &kinds).ok()?;
    (shapes.len() == 1).then(|| shapes.remove(0))
}

/// The attributes (non-tensor arguments) of `args`, in order.
fn attrs_of(args: &[Arg]) -> Vec<Arg> {
    args.iter()
        .filter(|a| !matches!(a, Arg::Tensor(_)))
        .cloned()
        .collect()
}

/// The mutants of a product family: each operator of the family on the
/// operands in either order, each operand and the result transposed or
/// not.
fn products(t: &Template, args: &[Arg], rank: usize) -> Vec<Draft> {
    let swap = Layout::Swap {
        a: rank - 2,
        b: rank - 1,
    };
    let both = [Vec::new(), vec![swap.clone()]];
    let mut out = Vec::new();
    for op in t.ops {
        for order in [[0, 1], [1, 0]] {
            for pa in &both {
                for pb in &both {
                    for post in &both {
                        let depth = 1 + [pa, pb, post].iter().filter(|s| !s.is_empty()).count();
                        let mut what = op.to_string();
                        if order == [1, 0] {
                            what += " of the operands swapped";
                        }
                        for (k, s) in [pa, pb].iter().enumerate() {
                            if !s.is_empty() {
                                what += &format!(", operand {} transposed", k + 1);
                            }
                        }
                        if !post.is_empty() {
                            what += ", result transposed";
                        }
                        out.push(Draft {
                            op,
                            inputs: vec![
                                Input {
                                    arg: order[0],
                                    steps: pa.clone(),
                                },
                                Input {
                                    arg: order[1],
                                    steps: pb.clone(),
                                },
                            ],
                            attrs: attrs_of(args),
                            post: post.clone(),
                            depth,
                            what,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The mutants of a 2-D convolution.
fn conv2d(args: &[Arg]) -> Vec<Draft> {
    let (Some(Arg::Tensor(x)), Some(Arg::Tensor(_))) = (args.first(), args.get(1)) else {
        return Vec::new();
    };
    let ints: Option<Vec<i64>> = args[2..]
        .iter()
        .map(|a| match a {
            Arg::Int(v) => Some(*v),
            _ => None,
        })
        .collect();
    let Some(a) = ints.filter(|a| a.len() == 9) else {
        return Vec::new();
    };
    // a = [sh, sw, ph0, pw0, ph1, pw1, dh, dw, G].
    let factors = |axis: usize| -> Vec<i64> {
        let mut f = vec![x[axis], 2];
        if axis >= 2 {
            f.extend([a[axis - 2], a[axis + 4]]);
        }
        f.sort_unstable();
        f.dedup();
        f.retain(|&f| f >= 2 && x[axis] % f == 0);
        f
    };
    let mut pres: Vec<Vec<Layout>> = Vec::new();
    for from in 0..4 {
        for to in (0..4).filter(|&t| t != from) {
            for factor in factors(from) {
                for from_inner in [false, true] {
                    if from_inner && factor == x[from] {
                        continue;
                    }
                    for to_inner in [false, true] {
                        if to_inner && x[to] == 1 {
                            continue;
                        }
                        pres.push(vec![Layout::Move {
                            from,
                            to,
                            factor,
                            from_inner,
                            to_inner,
                        }]);
                    }
                }
            }
        }
    }
    // Pairs of like moves from two axes into one (a dilation's taps of
    // both spatial axes into the batch, say), one compound.
    let singles = pres.clone();
    for p in &singles {
        for q in &singles {
            if let (
                [Layout::Move {
                    from: f1,
                    to: t1,
                    factor: k1,
                    from_inner: i1,
                    to_inner: o1,
                }],
                [Layout::Move {
                    from: f2,
                    to: t2,
                    factor: k2,
                    from_inner: i2,
                    to_inner: o2,
                }],
            ) = (p.as_slice(), q.as_slice())
            {
                if f1 < f2 && t1 == t2 && k1 == k2 && i1 == i2 && o1 == o2 {
                    pres.push(vec![p[0].clone(), q[0].clone()]);
                }
            }
        }
    }
    for i in 0..4 {
        for j in i + 1..4 {
            pres.push(vec![Layout::Swap { a: i, b: j }]);
        }
    }
    let mut out = Vec::new();
    for pre in pres {
        let Some(post) = layout::inverse(&pre) else {
            continue;
        };
        for (attrs, weights, why) in conv_attrs(&a, &pre) {
            out.push(Draft {
                op: "conv2d",
                inputs: vec![
                    Input {
                        arg: 0,
                        steps: pre.clone(),
                    },
                    Input {
                        arg: 1,
                        steps: weights,
                    },
                ],
                attrs: attrs.into_iter().map(Arg::Int).collect(),
                post: post.clone(),
                depth: 3,
                what: format!(
                    "{}, conv2d{why}, undone",
                    layout::describe(&pre, &CONV_AXES)
                ),
            });
        }
    }
    out
}

/// The axes of a convolution's data, by name.
const CONV_AXES: [&str; 4] = ["batch", "channels", "height", "width"];

/// The attribute choices of a convolution whose data input takes layout
/// `pre`: the original attributes, and those following the layout; each
/// with the weights' layout and a description.
fn conv_attrs(a: &[i64], pre: &[Layout]) -> Vec<(Vec<i64>, Vec<Layout>, String)> {
    let mut out = vec![(a.to_vec(), Vec::new(), String::new())];
    let mut b = a.to_vec();
    let mut weights = Vec::new();
    let mut why = Vec::new();
    for l in pre {
        match *l {
            Layout::Move {
                from,
                factor,
                from_inner: true,
                ..
            } if from >= 2 => {
                // Every `factor`-th element of a spatial axis moved out: a
                // dilation of `factor` becomes one, its pads shrink.
                let k = from - 2;
                let (d, p0, p1) = (b[6 + k], b[2 + k], b[4 + k]);
                if d % factor == 0 && p0 % factor == 0 && p1 % factor == 0 {
                    b[6 + k] = d / factor;
                    b[2 + k] = p0 / factor;
                    b[4 + k] = p1 / factor;
                    why.push(format!(
                        "dilation {} along the {}",
                        d / factor,
                        CONV_AXES[from]
                    ));
                }
            }
            Layout::Move {
                from: 0 | 2 | 3,
                to: 1,
                factor,
                from_inner: false,
                to_inner: false,
            } => {
                // Images (or bands of rows or columns) side by side in the
                // channels: one group each, the filters repeated. Bands
                // lose the rows they read across their edges, which the
                // corrections recompute.
                b[8] *= factor;
                weights.push(Layout::Tile {
                    axis: 0,
                    times: factor,
                });
                why.push(format!("{} groups", b[8]));
            }
            Layout::Swap { a: 2, b: 3 } => {
                for k in [0, 2, 4, 6] {
                    b.swap(k, k + 1);
                }
                weights.push(Layout::Swap { a: 2, b: 3 });
                why.push("the kernel transposed".to_string());
            }
            _ => {}
        }
    }
    if b != a || !weights.is_empty() {
        let why = format!(" with {}", why.join(" and "));
        out.push((b, weights, why));
    }
    out
}

/// The text of draft `d`'s def named `name` (the original's arguments
/// `args`, output shape `shape`), or `None` when it is not shape-valid.
fn write(program: &Program, args: &[Arg], d: &Draft, shape: &[i64], name: &str) -> Option<String> {
    let mut params = Vec::new();
    let mut body = Vec::new();
    for (k, a) in args.iter().enumerate() {
        if let Arg::Tensor(s) = a {
            params.push(format!("float({}) x{k}", join(s)));
        }
    }
    let mut call_args = Vec::new();
    let mut kinds = Vec::new();
    let mut attrs = d.attrs.iter();
    let mut inputs = d.inputs.iter();
    let callee = program.def(d.op)?;
    for p in &callee.params {
        match p {
            ir::Param::Tensor(_) => {
                let input = inputs.next()?;
                let Arg::Tensor(s) = &args[input.arg] else {
                    return None;
                };
                let from = format!("x{}", input.arg);
                if input.steps.is_empty() {
                    call_args.push(from);
                    kinds.push(ArgKind::Tensor(s.clone()));
                } else {
                    let t = format!("t{}", body.len() + 1);
                    body.push(layout::comprehension(&input.steps, &from, s, &t)?);
                    call_args.push(t);
                    kinds.push(ArgKind::Tensor(layout::shape_after(&input.steps, s)?));
                }
            }
            ir::Param::Scalar { .. } => {
                let a = attrs.next()?;
                call_args.push(a.text());
                kinds.push(a.kind());
            }
        }
    }
    if inputs.next().is_some() || attrs.next().is_some() {
        return None;
    }
    let mut shapes = call_shapes(callee, &kinds).ok()?;
    if shapes.len() != 1 {
        return None;
    }
    let result = shapes.remove(0);
    if layout::shape_after(&d.post, &result)? != shape {
        return None;
    }
    let call = format!("{}({})", d.op, call_args.join(", "));
    if d.post.is_empty() {
        body.push(format!("y = {call}"));
    } else {
        body.push(format!("u = {call}"));
        body.push(layout::comprehension(&d.post, "u", &result, "y")?);
    }
    Some(format!(
        "def {name}({}) -> (y) {{\n{}\n}}\n",
        params.join(", "),
        body.iter()
            .map(|s| format!("  {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
