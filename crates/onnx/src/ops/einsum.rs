//! `Einsum` in general form: any equation over any number of operands,
//! written as one comprehension in the model def (`Y(i, j) +=! A(i, k) *
//! B(k, j)`), for the equations that are not a matrix product of two
//! float32 operands (`linear::einsum` gives those the prelude's products).
//!
//! The equation follows numpy's `einsum`: a label repeated within one
//! operand reads its diagonal; labels absent from the output are summed;
//! `...` stands for the dimensions no label names, aligned at the right
//! and broadcast across operands (a dimension of 1 stretched); without
//! `->` the output is the broadcast `...` dimensions, then the labels
//! that appear once, in alphabetical order.
//!
//! Requires operands of one numeric element type. Guarantees an error
//! naming the node for an equation that does not parse or does not fit
//! the operands' ranks and sizes.

use std::collections::BTreeMap;

use ir::DType;

use crate::build::{Node, Var};
use crate::import::Importer;

/// A dimension's name in the equation: a letter, or the `k`-th of the
/// broadcast `...` dimensions (from the left).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Label {
    Dots(usize),
    Letter(char),
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Letter(c) => write!(f, "`{c}`"),
            Label::Dots(k) => write!(f, "`...` dimension {k}"),
        }
    }
}

/// One term of the equation: its letters, and where its `...` is.
struct Term {
    before: Vec<char>,
    /// The letters after `...`, when the term has one.
    after: Option<Vec<char>>,
}

fn parse_term(n: &Node, eq: &str, s: &str) -> Result<Term, String> {
    let letters = |part: &str| -> Result<Vec<char>, String> {
        part.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c)
                } else {
                    Err(n.error(format!(
                        "the equation `{eq}` has `{c}`, which is not a letter"
                    )))
                }
            })
            .collect()
    };
    Ok(match s.split_once("...") {
        Some((b, a)) => Term {
            before: letters(b)?,
            after: Some(letters(a)?),
        },
        None => Term {
            before: letters(s)?,
            after: None,
        },
    })
}

impl Term {
    /// The labels of an operand of rank `rank` whose `...` (if any) covers
    /// `rank - letters` dimensions, of `dots` broadcast ones in all.
    fn labels(&self, rank: usize, dots: usize) -> Option<Vec<Label>> {
        let mut out: Vec<Label> = self.before.iter().map(|&c| Label::Letter(c)).collect();
        if let Some(after) = &self.after {
            let e = rank.checked_sub(self.before.len() + after.len())?;
            out.extend((dots - e..dots).map(Label::Dots));
            out.extend(after.iter().map(|&c| Label::Letter(c)));
        }
        (out.len() == rank).then_some(out)
    }

    /// How many dimensions its `...` covers in an operand of rank `rank`.
    fn dots(&self, rank: usize) -> usize {
        match &self.after {
            Some(a) => rank.saturating_sub(self.before.len() + a.len()),
            None => 0,
        }
    }
}

/// The comprehension computing `Einsum(equation = eq)` of `n`'s inputs.
pub(crate) fn general(im: &mut Importer, n: &Node, eq: &str) -> Result<Var, String> {
    let operands = super::map::inputs(im, n)?;
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq, None),
    };
    let terms: Vec<Term> = lhs
        .split(',')
        .map(|t| parse_term(n, eq, t))
        .collect::<Result<_, _>>()?;
    if terms.len() != operands.len() {
        return Err(n.error(format!(
            "the equation `{eq}` has {} operands, but the node has {} inputs",
            terms.len(),
            operands.len()
        )));
    }
    let t = operands[0].dtype;
    if operands.iter().any(|v| v.dtype != t) || t == DType::Bool {
        let types: Vec<String> = operands.iter().map(|v| v.dtype.to_string()).collect();
        return Err(n.error(format!(
            "operands of types {} are not supported (one numeric type is)",
            types.join(", ")
        )));
    }
    let dots = terms
        .iter()
        .zip(&operands)
        .map(|(t, v)| t.dots(v.shape.len()))
        .max()
        .unwrap_or(0);
    // Every operand's labels, and every label's size (a `...` dimension
    // of 1 broadcasts; a letter's sizes must agree).
    let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
    let mut labelled = Vec::new();
    for (term, v) in terms.iter().zip(&operands) {
        let labels = term.labels(v.shape.len(), dots).ok_or_else(|| {
            n.error(format!(
                "the equation `{eq}` does not fit an operand of shape {:?}",
                v.shape
            ))
        })?;
        for (&l, &d) in labels.iter().zip(&v.shape) {
            let size = sizes.entry(l).or_insert(d);
            match l {
                Label::Dots(_) if *size == 1 || d == 1 => *size = (*size).max(d),
                _ if *size != d => {
                    return Err(n.error(format!(
                        "the equation `{eq}` gives {l} the sizes {size} and {d}"
                    )))
                }
                _ => {}
            }
        }
        labelled.push(labels);
    }
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let term = parse_term(n, eq, r)?;
            let rank = term.before.len() + term.after.as_ref().map_or(0, |a| a.len() + dots);
            term.labels(rank, dots)
                .ok_or_else(|| n.error(format!("the equation `{eq}` has a bad output")))?
        }
        None => {
            let mut count: BTreeMap<char, usize> = BTreeMap::new();
            for labels in &labelled {
                for l in labels {
                    if let Label::Letter(c) = l {
                        *count.entry(*c).or_default() += 1;
                    }
                }
            }
            (0..dots)
                .map(Label::Dots)
                .chain(
                    count
                        .into_iter()
                        .filter(|&(_, k)| k == 1)
                        .map(|(c, _)| Label::Letter(c)),
                )
                .collect()
        }
    };
    let mut iterator: BTreeMap<Label, String> = BTreeMap::new();
    for (k, &l) in output.iter().enumerate() {
        if !sizes.contains_key(&l) || iterator.insert(l, format!("_i{k}")).is_some() {
            return Err(n.error(format!(
                "the equation `{eq}`'s output names {l} twice or in no operand"
            )));
        }
    }
    let mut ranges = Vec::new();
    for (k, (&l, &size)) in sizes.iter().enumerate() {
        iterator.entry(l).or_insert_with(|| {
            let name = format!("_s{k}");
            ranges.push(format!("{name} in 0:{size}"));
            name
        });
    }
    let reads: Vec<String> = operands
        .iter()
        .zip(&labelled)
        .map(|(v, labels)| {
            let ix: Vec<String> = labels
                .iter()
                .zip(&v.shape)
                .map(|(l, &d)| {
                    if d == 1 && sizes[l] != 1 {
                        "0".to_string()
                    } else {
                        iterator[l].clone()
                    }
                })
                .collect();
            format!("{}({})", v.name, ix.join(", "))
        })
        .collect();
    let shape: Vec<usize> = output.iter().map(|l| sizes[l]).collect();
    let reduction = if ranges.is_empty() { "=" } else { "+=!" };
    Ok(im
        .b
        .compute(reduction, &reads.join(" * "), &ranges, t, shape))
}
