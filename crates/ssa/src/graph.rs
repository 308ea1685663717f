//! The imperative graph: what the frontend builds from a Python def, and
//! what TensorSSA's conversion rewrites (the paper's "graph-level IR", in
//! the style of TorchScript's).
//!
//! Values are defined once, by a node's output or a block's parameter; a
//! Python variable that is rebound names a new value each time. Tensors are
//! shared storage, though: a view node's output aliases its input, and a
//! mutation node changes the storage its target aliases, so every value
//! of that storage changes with it. Conversion removes views and mutations
//! (Access, Assign and Update replace them) until the graph is pure.
//!
//! Nodes live in an arena and blocks list them in order; a loop or branch
//! node owns its blocks. A loop's block takes the index and the carried
//! values as parameters and returns the next carried values; a branch's two
//! blocks return its outputs. Sizes are concrete: the frontend traces a def
//! at the shapes of its arguments, as the decorator and `tessera run`
//! specialize on them.

use ir::{BinOp, DType};

pub type ValueId = usize;
pub type NodeId = usize;
pub type BlockId = usize;

/// A byte range of the source, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

/// What a value is.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Tensor {
        dtype: DType,
        shape: Vec<i64>,
    },
    /// A Python `int` (an `int64` at run time).
    Int,
    /// A Python `float` (a `float32` when it meets a tensor, as in PyTorch).
    Float,
    Bool,
}

impl Ty {
    pub fn tensor(dtype: DType, shape: Vec<i64>) -> Ty {
        Ty::Tensor { dtype, shape }
    }

    pub fn shape(&self) -> Option<&[i64]> {
        match self {
            Ty::Tensor { shape, .. } => Some(shape),
            _ => None,
        }
    }
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Output `k` of a node.
    Node(NodeId, usize),
    /// Parameter `k` of a block.
    Param(BlockId, usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// The Python variable it was bound to first (a hint for printing).
    pub name: String,
    pub ty: Ty,
    pub origin: Origin,
}

/// One view step: how a view's elements map to its base's.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    /// Elements `start, start + step, ...` (`len` of them) along `dim`.
    Slice {
        dim: usize,
        start: i64,
        step: i64,
        len: i64,
    },
    /// Index `i` along `dim`, which the view drops; the index is the
    /// node's second input (an `int` value).
    Select { dim: usize },
    /// Dimension `k` of the view is dimension `perm[k]` of the base.
    Permute(Vec<usize>),
    /// A new dimension of size 1 at `dim`.
    Unsqueeze(usize),
    /// Dimension `dim`, of size 1, dropped.
    Squeeze(usize),
    /// Size-1 dimensions repeated (stride 0) to `shape`; new leading
    /// dimensions allowed. Writing through it is an error, as in PyTorch.
    Expand(Vec<i64>),
    /// The same elements in row-major order under a new shape (the base
    /// is contiguous, so this is a view).
    Reshape(Vec<i64>),
}

/// A pure elementwise operation on broadcast operands.
#[derive(Clone, Debug, PartialEq)]
pub enum Elem {
    Binary(BinOp),
    Neg,
    Not,
    /// A builtin of `ir` by name (`exp`, `tanh`, `sigmoid`, ...).
    Builtin(ir::Builtin),
    Relu,
    /// `where(c, a, b)`.
    Where,
    /// Clamp between optional bounds (the second and third inputs).
    Clamp {
        min: bool,
        max: bool,
    },
    /// The operand converted to the output's element type.
    Cast,
}

/// What a reduction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Mean,
    Max,
    Min,
    /// Whether any element is true (nonzero).
    Any,
    /// Whether every element is true (nonzero).
    All,
}

/// An in-place update of its target (the node's first input): the value
/// the target holds after it.
#[derive(Clone, Debug, PartialEq)]
pub enum Mutation {
    /// `target.copy_(src)`, slice assignment: the second input, broadcast
    /// and converted to the target's type.
    Copy,
    /// `target.op_(args)`: the target becomes `op(target, args...)`.
    Elem(Elem),
    /// `target.masked_fill_(mask, value)`: `where(mask, value, target)`.
    MaskedFill,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A Python scalar constant.
    Const(ir::Value),
    /// Python arithmetic or comparison on scalars.
    Scalar(Elem),
    /// A 0-d tensor holding a scalar (where a tensor must carry it).
    ToTensor,
    /// The value of a 0-d tensor as a scalar (`bool(t)`, `t.item()`).
    Item,
    /// An elementwise operation on tensors and scalars, broadcast.
    Elem(Elem),
    /// A tensor of the output's shape filled with the (scalar) input.
    Full,
    /// A copy in fresh storage (`clone`, and `reshape` of a non-view).
    Clone,
    /// `0, 1, ..., n-1` in the output's element type.
    Arange,
    /// `a @ b` with PyTorch's rules for 1-D, 2-D and batched operands.
    Matmul,
    /// A reduction over `dims` (`sum`, `amax`, `amin`, `any`, `all`), or
    /// the mean (a sum divided by the count).
    Reduce {
        op: Reduce,
        dims: Vec<usize>,
        keepdim: bool,
    },
    /// The index of the first largest element along `dim`.
    Argmax { dim: usize, keepdim: bool },
    /// `softmax` (or `log_softmax`) along `dim`.
    Softmax { dim: usize, log: bool },
    /// The inputs concatenated along `dim`.
    Cat { dim: usize },
    /// Rows of the first input picked by the second (an integer tensor)
    /// along `dim`: `x[idx]`, `index_select`.
    IndexSelect { dim: usize },
    /// `base[view]`, aliasing `base`.
    View(View),
    /// An in-place update; no outputs.
    Mutate(Mutation),
    /// TensorSSA's Access: a new tensor holding `base[view]`.
    Access(View),
    /// TensorSSA's Assign: a new tensor equal to `base` with `base[view]`
    /// replaced by the second input.
    Assign(View),
    /// TensorSSA's Update(new, old): after it, uses of `old` mean `new`.
    /// Conversion inserts and then removes them; no outputs.
    Update,
    /// A loop: inputs are the count (if `counted`), then the carried
    /// values' initial values; the block's parameters are the index and
    /// the carried values; it returns the condition for the next iteration
    /// (if `conditional`; the first is the node's input after the count),
    /// then the next carried values; outputs are the final carried values.
    Loop { counted: bool, conditional: bool },
    /// A branch on its input; two blocks, each returning the outputs.
    If,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
    pub blocks: Vec<BlockId>,
    /// The block this node is in.
    pub block: BlockId,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    pub params: Vec<ValueId>,
    pub nodes: Vec<NodeId>,
    pub returns: Vec<ValueId>,
    /// The loop or branch node owning the block (`None` for the def's).
    pub owner: Option<NodeId>,
}

/// One def: its block 0 takes the parameters and returns the results.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub name: String,
    pub values: Vec<Value>,
    pub nodes: Vec<Node>,
    pub blocks: Vec<Block>,
    /// Which parameters of block 0 are Python scalars given by the caller
    /// (kept as scalar parameters of the converted def).
    pub scalar_params: Vec<ValueId>,
}

pub const ROOT: BlockId = 0;

impl Graph {
    pub fn new(name: &str) -> Graph {
        Graph {
            name: name.to_string(),
            values: Vec::new(),
            nodes: Vec::new(),
            blocks: vec![Block::default()],
            scalar_params: Vec::new(),
        }
    }

    pub fn ty(&self, v: ValueId) -> &Ty {
        &self.values[v].ty
    }

    /// A new parameter of block `b`.
    pub fn add_param(&mut self, b: BlockId, name: &str, ty: Ty) -> ValueId {
        let v = self.values.len();
        let k = self.blocks[b].params.len();
        self.values.push(Value {
            name: name.to_string(),
            ty,
            origin: Origin::Param(b, k),
        });
        self.blocks[b].params.push(v);
        v
    }

    /// A new empty block owned by node `owner`.
    pub fn add_block(&mut self, owner: NodeId) -> BlockId {
        self.blocks.push(Block {
            owner: Some(owner),
            ..Block::default()
        });
        self.blocks.len() - 1
    }

    /// A new node (not yet placed in any block's order) with outputs of
    /// the given names and types.
    pub fn make_node(
        &mut self,
        block: BlockId,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: &[(&str, Ty)],
        span: Span,
    ) -> NodeId {
        let n = self.nodes.len();
        let outs = outputs
            .iter()
            .enumerate()
            .map(|(k, (name, ty))| {
                self.values.push(Value {
                    name: name.to_string(),
                    ty: ty.clone(),
                    origin: Origin::Node(n, k),
                });
                self.values.len() - 1
            })
            .collect();
        self.nodes.push(Node {
            op,
            inputs,
            outputs: outs,
            blocks: Vec::new(),
            block,
            span,
        });
        n
    }

    /// A new node appended to block `block`.
    pub fn push(
        &mut self,
        block: BlockId,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: &[(&str, Ty)],
        span: Span,
    ) -> NodeId {
        let n = self.make_node(block, op, inputs, outputs, span);
        self.blocks[block].nodes.push(n);
        n
    }

    /// A new output of node `n` (a region's, as conversion carries a value
    /// out of it).
    pub fn add_output(&mut self, n: NodeId, name: &str, ty: Ty) -> ValueId {
        let k = self.nodes[n].outputs.len();
        self.values.push(Value {
            name: name.to_string(),
            ty,
            origin: Origin::Node(n, k),
        });
        let v = self.values.len() - 1;
        self.nodes[n].outputs.push(v);
        v
    }

    /// The block a value is defined in.
    pub fn block_of(&self, v: ValueId) -> BlockId {
        match self.values[v].origin {
            Origin::Node(n, _) => self.nodes[n].block,
            Origin::Param(b, _) => b,
        }
    }

    /// The blocks from `b` out to the root, `b` first.
    pub fn enclosing(&self, b: BlockId) -> Vec<BlockId> {
        let mut out = vec![b];
        let mut at = b;
        while let Some(owner) = self.blocks[at].owner {
            at = self.nodes[owner].block;
            out.push(at);
        }
        out
    }
}
