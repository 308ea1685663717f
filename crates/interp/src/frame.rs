//! The frame compiled closures evaluate against, and the closure types.
//!
//! A comprehension is compiled once per statement execution into closures
//! over a [`Frame`]: iterator values live in fixed slots at the start of
//! `ints` (in iteration order), each let binding in its own slot of the array
//! for its kind, so evaluation never looks a name up. A closure either
//! returns its value or [`Stop`]s: `Skip` abandons the current point of a
//! reduction (an out-of-bounds skippable read), `Fail` aborts the run with
//! the message left in [`Frame::message`].

use ir::DType;

/// Why an evaluation stopped without a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A skippable read fell outside its tensor: the point contributes nothing.
    Skip,
    /// An error; the frame holds its message.
    Fail,
}

pub(crate) type Eval<T> = Result<T, Stop>;

pub(crate) type FloatFn<'a> = Box<dyn Fn(&mut Frame) -> Eval<f64> + 'a>;
pub(crate) type IntFn<'a> = Box<dyn Fn(&mut Frame) -> Eval<i64> + 'a>;
pub(crate) type BoolFn<'a> = Box<dyn Fn(&mut Frame) -> Eval<bool> + 'a>;
pub(crate) type ResidueFn<'a> = Box<dyn Fn(&mut Frame) -> Eval<u64> + 'a>;

/// Slots of iterators and lets, and the message of a failed evaluation.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    /// Iterators first, then integer and `bool` (0/1) lets.
    pub ints: Vec<i64>,
    pub floats: Vec<f64>,
    /// Lets evaluated as residues in mod-p mode.
    pub residues: Vec<u64>,
    pub message: String,
}

impl Frame {
    /// Records an error and returns the `Stop` that carries it out.
    pub(crate) fn fail(&mut self, message: String) -> Stop {
        self.message = message;
        Stop::Fail
    }
}

/// Where a let's value lives, with its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Float(usize, DType),
    Int(usize, DType),
    Bool(usize),
}

/// The slots of one let: its ordinary value and, in mod-p mode, its residue
/// (a let may be needed as both: `t = i + 1` used in `A(t) * t`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LetSlots {
    pub real: Option<Slot>,
    pub residue: Option<usize>,
}

/// A compiled let: evaluate, then store into its slot.
pub(crate) enum LetEval<'a> {
    Float(usize, FloatFn<'a>),
    Int(usize, IntFn<'a>),
    Bool(usize, BoolFn<'a>),
    Residue(usize, ResidueFn<'a>),
}

/// Evaluates the lets of a comprehension in order at the current point.
pub(crate) fn eval_lets(frame: &mut Frame, lets: &[LetEval]) -> Eval<()> {
    for l in lets {
        match l {
            LetEval::Float(s, g) => frame.floats[*s] = g(frame)?,
            LetEval::Int(s, g) => frame.ints[*s] = g(frame)?,
            LetEval::Bool(s, g) => frame.ints[*s] = i64::from(g(frame)?),
            LetEval::Residue(s, g) => frame.residues[*s] = g(frame)?,
        }
    }
    Ok(())
}
