//! The kernel IR: nested parallel polyhedral blocks (Stripe §3.2).
//!
//! A [`Block`] has named indices, each with a range `[0, range)` (or, for an
//! index passed from the parent, an affine value of the parent's indices and
//! range 1), affine constraints (`form >= 0`) that cut the iteration space,
//! refinements that bring buffers (or views of them) into scope, and one
//! statement list run serially at every point of the space. Points are
//! independent except through the aggregation of the buffers they write.
//!
//! Addressing: a refinement's `access` gives, for each dimension of the
//! buffer it refines, the offset of its view in terms of this block's
//! indices; the view's `shape` gives its sizes and the strides (in elements
//! of the underlying storage) used to address it. An element of a view at
//! position `p` lives at `origin(parent view) + sum(access[d] * stride[d])`
//! `+ sum(p[d] * stride[d])` of the root buffer. `load` and `store` read and
//! write element `0, ..., 0` of a view. Sizes are concrete: kernels are
//! lowered for bound sizes.

use std::collections::BTreeSet;

use ir::{DType, Value};

use crate::Affine;

/// A set of tags: strings with no meaning to the semantics, for passes.
pub type Tags = BTreeSet<String>;

#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    pub name: String,
    /// The index runs over `0..range`.
    pub range: u64,
    /// For an index passed from the parent: its value as an affine form of
    /// the parent's indices (and then `range` is 1).
    pub affine: Option<Affine>,
    pub tags: Tags,
}

/// How a refinement is used by the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefDir {
    /// Brought into scope without reads or writes (or a local buffer).
    None,
    In,
    Out,
    InOut,
}

/// How values written to one element by several iterations combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agg {
    /// At most one iteration writes each element.
    Assign,
    Add,
    Mul,
    Min,
    Max,
}

/// One dimension of a view: how many elements, and the distance between
/// consecutive ones in the underlying storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    pub size: u64,
    pub stride: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Refinement {
    pub dir: RefDir,
    /// The parent's buffer this refines; `None` allocates a new buffer local
    /// to this block (zero-initialized for each iteration).
    pub from: Option<String>,
    /// The name of the view in this block.
    pub into: String,
    /// The view's offset in each dimension of the refined buffer, as affine
    /// forms of this block's indices (empty for a new buffer).
    pub access: Vec<Affine>,
    pub dtype: DType,
    pub shape: Vec<Dim>,
    pub agg: Agg,
    /// Where the buffer lives (a memory unit name), when a pass decided it.
    pub location: Option<String>,
    pub tags: Tags,
}

/// A scalar operation of an intrinsic statement. Every operation has the
/// semantics of the IR operation of the same name (`ir::BinOp`, `ir::UnOp`,
/// `ir::Builtin`) in the interpreter: float32 rounding, integer wrapping,
/// floor division.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Unary(ir::UnOp),
    Binary(ir::BinOp),
    Builtin(ir::Builtin),
    /// `select(c, a, b)`.
    Select,
    /// Conversion to the statement's type.
    Cast,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `$into = load(from)`: element `0, ..., 0` of view `from`.
    Load {
        from: String,
        into: String,
    },
    /// `into = store($from)`: combined with the view's aggregation.
    Store {
        from: String,
        into: String,
    },
    /// `$into = index(form)`: an affine form of the indices, as `int64`.
    LoadIndex {
        from: Affine,
        into: String,
    },
    /// `$into = dtype(value)`.
    Constant {
        into: String,
        value: Value,
        dtype: DType,
    },
    /// `$into = op($a, ...)`, computed in `dtype`.
    Intrinsic {
        op: Op,
        inputs: Vec<String>,
        into: String,
        dtype: DType,
    },
    /// `$into = gather(from, $i0, ...)`: the element of view `from` at the
    /// given (data-dependent) positions; out of bounds is a runtime error.
    Gather {
        from: String,
        indices: Vec<String>,
        into: String,
    },
    Block(Box<Block>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub kind: StmtKind,
    pub tags: Tags,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub name: String,
    /// Free text, e.g. the comprehension the block came from.
    pub comment: String,
    pub tags: Tags,
    pub idxs: Vec<Index>,
    /// Each form must be `>= 0` at a point for the point to run.
    pub constraints: Vec<Affine>,
    pub refs: Vec<Refinement>,
    pub stmts: Vec<Statement>,
}

impl Block {
    pub fn new(name: &str) -> Block {
        Block {
            name: name.to_string(),
            comment: String::new(),
            tags: Tags::new(),
            idxs: Vec::new(),
            constraints: Vec::new(),
            refs: Vec::new(),
            stmts: Vec::new(),
        }
    }

    pub fn refinement(&self, name: &str) -> Option<&Refinement> {
        self.refs.iter().find(|r| r.into == name)
    }

    pub fn index(&self, name: &str) -> Option<&Index> {
        self.idxs.iter().find(|i| i.name == name)
    }

    /// The number of points of the index box (before constraints).
    pub fn points(&self) -> u64 {
        self.idxs
            .iter()
            .fold(1u64, |a, i| a.saturating_mul(i.range))
    }

    /// Replaces indices by affine forms (those `f` maps) where this block's
    /// statements name them: its `index` statements and the forms its child
    /// blocks are passed (a child's own views and constraints name only
    /// its own indices).
    pub fn subst_in_stmts(&mut self, f: &dyn Fn(&str) -> Option<Affine>) {
        for s in &mut self.stmts {
            match &mut s.kind {
                StmtKind::LoadIndex { from, .. } => *from = from.subst(f),
                StmtKind::Block(c) => {
                    for ix in &mut c.idxs {
                        if let Some(a) = &mut ix.affine {
                            *a = a.subst(f);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl Block {
    /// The block reached by following statement numbers from this one
    /// (each a nested block statement).
    pub fn at(&self, path: &[usize]) -> Option<&Block> {
        path.iter()
            .try_fold(self, |b, &k| match &b.stmts.get(k)?.kind {
                StmtKind::Block(c) => Some(&**c),
                _ => None,
            })
    }

    /// [`Block::at`], mutably.
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Block> {
        path.iter()
            .try_fold(self, |b, &k| match &mut b.stmts.get_mut(k)?.kind {
                StmtKind::Block(c) => Some(&mut **c),
                _ => None,
            })
    }

    /// Whether passes must leave the block as it is: the runtime runs it
    /// with a library kernel (tag `library`), which reads the block's form.
    pub fn is_library(&self) -> bool {
        self.tags.contains("library")
    }

    /// Whether the points of this block reach each element of `buffer`
    /// exactly once through `view` (a refinement of it): no constraints,
    /// a one-element view whose access is the block's own indices in
    /// order, their ranges the buffer's sizes.
    pub fn visits_each_element(&self, view: &Refinement, buffer: &Refinement) -> bool {
        self.constraints.is_empty()
            && view.shape.iter().all(|d| d.size == 1)
            && self.idxs.len() == buffer.shape.len()
            && view.access.len() == self.idxs.len()
            && self
                .idxs
                .iter()
                .zip(&view.access)
                .zip(&buffer.shape)
                .all(|((i, a), d)| {
                    i.affine.is_none() && i.range == d.size && *a == Affine::index(&i.name)
                })
    }
}

/// Row-major strides for a buffer of `dtype` elements of shape `sizes`;
/// `None` if a stride, the number of elements or the size in bytes leaves
/// `int64` (no such buffer can be addressed, and kernels compute offsets in
/// `int64`).
pub fn row_major(sizes: &[u64], dtype: DType) -> Option<Vec<Dim>> {
    let mut dims: Vec<Dim> = sizes.iter().map(|&size| Dim { size, stride: 0 }).collect();
    let mut stride = 1i64;
    for d in dims.iter_mut().rev() {
        d.stride = stride;
        stride = stride.checked_mul(i64::try_from(d.size).ok()?)?;
    }
    // `stride` is now the number of elements.
    stride.checked_mul(i64::from(dtype.bits() / 8))?;
    Some(dims)
}
