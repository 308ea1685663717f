//! Defs generated on demand, for operator forms too many to list in the
//! prelude: a transpose for each permutation and a gather for each axis and
//! index rank, of any element type, up to rank [`MAX_RANK`].
//!
//! An importer asks for the form it needs and calls the def by the name it
//! gets back; the name spells the form (`transpose_r5_p31204`,
//! `gather_i64_r3_a1_i2`), so one form is one def however many nodes use
//! it, and the same model always gives the same program. The import puts
//! the defs written before the model def, after the prelude.
//!
//! Guarantees: every def written checks with the prelude (tested on every
//! form up to rank 4 and on random ones up to [`MAX_RANK`]); its name
//! starts with one of [`FAMILIES`], which no prelude def does, so no
//! graph input is given such a name.

use std::collections::BTreeMap;

use ir::DType;

/// The highest rank of a generated form, operands and result alike (a
/// transpose's name spells its permutation with one digit per axis); no
/// model tessera has met needs more.
pub const MAX_RANK: usize = 8;

/// The name prefixes of the generated families.
pub const FAMILIES: &[&str] = &["transpose_", "gather_"];

/// The defs generated so far, by name.
#[derive(Debug, Default)]
pub struct Forms {
    defs: BTreeMap<String, String>,
}

impl Forms {
    /// The def of ONNX `Transpose` with permutation `perm` (of `0..rank`,
    /// rank 1 to [`MAX_RANK`], checked by the caller) on `dtype` tensors:
    /// result dimension `k` is input dimension `perm[k]`.
    pub fn transpose(&mut self, dtype: DType, perm: &[usize]) -> String {
        let r = perm.len();
        let code: String = perm.iter().map(ToString::to_string).collect();
        let name = format!("transpose_{}r{r}_p{code}", tag(dtype));
        self.defs.entry(name.clone()).or_insert_with(|| {
            let listed: Vec<String> = perm.iter().map(ToString::to_string).collect();
            let out: Vec<String> = perm.iter().map(|p| format!("i{p}")).collect();
            format!(
                "# {name}: ONNX Transpose with perm = ({}): Y's dimension k is X's dimension perm[k].\n\
                 def {name}({} X) -> (Y) {{\n  Y({}) = X({})\n}}\n",
                listed.join(", "),
                declared(dtype, "N", r),
                out.join(", "),
                iterators("i", r).join(", "),
            )
        });
        name
    }

    /// The def of ONNX `Gather` along `axis` of a rank-`rank` `dtype`
    /// tensor by int64 indices of rank `index_rank` (0 is one index): the
    /// result is `X.shape[..axis] + I.shape + X.shape[axis + 1..]`, and a
    /// negative index `i` means `i + X.shape[axis]`. The caller checked
    /// `axis < rank` and the ranks against [`MAX_RANK`].
    pub fn gather(&mut self, dtype: DType, rank: usize, axis: usize, index_rank: usize) -> String {
        let name = format!("gather_{}r{rank}_a{axis}_i{index_rank}", tag(dtype));
        self.defs.entry(name.clone()).or_insert_with(|| {
            let (i, j) = (iterators("i", rank), iterators("j", index_rank));
            let index = format!("I({})", j.join(", "));
            let wrapped = format!("{index} < 0 ? {index} + N{axis} : {index}");
            let mut read = i.clone();
            read[axis] = wrapped;
            let mut out = i[..axis].to_vec();
            out.extend(j);
            out.extend_from_slice(&i[axis + 1..]);
            let lhs = if out.is_empty() {
                "Y".to_string()
            } else {
                format!("Y({})", out.join(", "))
            };
            format!(
                "# {name}: ONNX Gather along axis {axis} of X by indices I; a negative index i means i + N{axis}.\n\
                 def {name}({} X, {} I) -> (Y) {{\n  {lhs} = X({})\n}}\n",
                declared(dtype, "N", rank),
                declared(DType::I64, "M", index_rank),
                read.join(", "),
            )
        });
        name
    }

    /// Every def generated, in name order, as TC source.
    pub fn text(&self) -> String {
        self.defs.values().map(|d| format!("{d}\n")).collect()
    }
}

/// The element type's part of a form's name: none for float32, the
/// prelude's `i64_` and `bool_` for the others it names, the type's own
/// name otherwise.
fn tag(dtype: DType) -> String {
    match dtype {
        DType::F32 => String::new(),
        DType::I64 => "i64_".to_string(),
        other => format!("{}_", other.name()),
    }
}

/// `prefix0, prefix1, ...`: `rank` names.
fn iterators(prefix: &str, rank: usize) -> Vec<String> {
    (0..rank).map(|k| format!("{prefix}{k}")).collect()
}

/// A tensor parameter's type with one size symbol per dimension
/// (`float32(N0, N1)`; `int64()` for rank 0).
fn declared(dtype: DType, symbol: &str, rank: usize) -> String {
    format!("{}({})", dtype.name(), iterators(symbol, rank).join(", "))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use interp::{Arg, Mode};
    use tensor::Tensor;
    use testkit::Rng;

    use super::*;

    /// The prelude and the defs of `forms`, checked, as a model's program.
    fn program(forms: &Forms) -> ir::Program {
        let text = format!("{}\n{}", crate::PRELUDE, forms.text());
        tc::check_source(&text)
            .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "forms", &text)))
            .program
    }

    /// Runs def `name` of `program` on `args`: its result, or the error.
    fn run(program: &ir::Program, name: &str, args: &[(&str, &Tensor)]) -> Result<Tensor, String> {
        let args: HashMap<String, Arg> = args
            .iter()
            .map(|(n, t)| (n.to_string(), Arg::Tensor((*t).clone())))
            .collect();
        let mut out = interp::run(program, name, &args, &HashMap::new(), Mode::Real)
            .map_err(|e| format!("{name}: {}", e.message))?;
        Ok(out.remove(0).1)
    }

    /// Every permutation of `0..r`.
    fn permutations(r: usize) -> Vec<Vec<usize>> {
        if r == 0 {
            return vec![vec![]];
        }
        let mut all = Vec::new();
        for p in permutations(r - 1) {
            for at in 0..r {
                let mut q = p.clone();
                q.insert(at, r - 1);
                all.push(q);
            }
        }
        all
    }

    /// `x` permuted by the tensor crate's view, made contiguous.
    fn permuted(x: &Tensor, perm: &[usize]) -> Tensor {
        x.permute(perm).unwrap().contiguous()
    }

    #[test]
    fn every_transpose_up_to_rank_4_moves_every_element() {
        let dims = [2, 3, 4, 5];
        let mut forms = Forms::default();
        let mut cases = Vec::new();
        for r in 1..=4 {
            for perm in permutations(r) {
                cases.push((forms.transpose(DType::F32, &perm), perm));
            }
        }
        let p = program(&forms);
        for (k, (name, perm)) in cases.iter().enumerate() {
            let x = Tensor::random(DType::F32, &dims[..perm.len()], k as u64);
            let y = run(&p, name, &[("X", &x)]).unwrap();
            assert_eq!(y, permuted(&x, perm), "{name}");
        }
    }

    #[test]
    fn transposes_up_to_the_highest_rank_and_of_other_types() {
        let mut rng = Rng::new(7);
        let mut forms = Forms::default();
        let mut cases = Vec::new();
        for r in 5..=MAX_RANK {
            let mut perm: Vec<usize> = (0..r).collect();
            rng.shuffle(&mut perm);
            let dims: Vec<usize> = (0..r).map(|k| 1 + (k % 3)).collect();
            cases.push((forms.transpose(DType::F32, &perm), perm, dims, DType::F32));
        }
        for dtype in [DType::I64, DType::Bool] {
            let perm = vec![3, 1, 2, 0, 4];
            cases.push((
                forms.transpose(dtype, &perm),
                perm,
                vec![2, 1, 3, 2, 2],
                dtype,
            ));
        }
        let p = program(&forms);
        for (k, (name, perm, dims, dtype)) in cases.iter().enumerate() {
            let x = Tensor::random(*dtype, dims, 100 + k as u64);
            let y = run(&p, name, &[("X", &x)]).unwrap();
            assert_eq!(y, permuted(&x, perm), "{name}");
        }
        assert!(forms
            .text()
            .contains("def transpose_i64_r5_p31204(int64(N0, N1"));
    }

    /// ONNX Gather written from its definition: `out[..a, j.., a+1..] =
    /// x[..a, idx[j..] (wrapped), a+1..]`.
    fn gathered(x: &Tensor, axis: usize, idx: &[i64], idx_shape: &[usize]) -> Tensor {
        let s = x.shape();
        let (outer, inner): (usize, usize) =
            (s[..axis].iter().product(), s[axis + 1..].iter().product());
        let v = x.to_f64_vec();
        let mut out = Vec::new();
        for o in 0..outer {
            for &i in idx {
                let i = if i < 0 { i + s[axis] as i64 } else { i } as usize;
                let at = (o * s[axis] + i) * inner;
                out.extend_from_slice(&v[at..at + inner]);
            }
        }
        let mut shape = s[..axis].to_vec();
        shape.extend(idx_shape);
        shape.extend(&s[axis + 1..]);
        Tensor::from_f64(x.dtype(), &shape, out)
    }

    #[test]
    fn gathers_along_every_axis_by_indices_of_every_rank() {
        let dims = [3, 4, 2, 5];
        let index_shapes: [&[usize]; 4] = [&[], &[2], &[2, 3], &[1, 2, 2]];
        let mut forms = Forms::default();
        let mut cases = Vec::new();
        for r in 1..=4 {
            for a in 0..r {
                for shape in index_shapes {
                    for dtype in [DType::F32, DType::I64] {
                        cases.push((forms.gather(dtype, r, a, shape.len()), r, a, shape, dtype));
                    }
                }
            }
        }
        let mut rng = Rng::new(3);
        let p = program(&forms);
        for (k, (name, r, a, shape, dtype)) in cases.iter().enumerate() {
            let x = Tensor::random(*dtype, &dims[..*r], 200 + k as u64);
            let n = dims[*a] as i64;
            // Indices from -n to n - 1: negative ones count from the end.
            let idx: Vec<i64> = (0..shape.iter().product::<usize>())
                .map(|_| rng.range(-n, n - 1))
                .collect();
            let i = Tensor::from_i64(DType::I64, shape, idx.clone());
            let y = run(&p, name, &[("X", &x), ("I", &i)]).unwrap();
            assert_eq!(y, gathered(&x, *a, &idx, shape), "{name} by {idx:?}");
        }
    }

    #[test]
    fn a_form_is_written_once_and_an_index_out_of_range_is_an_error() {
        let mut forms = Forms::default();
        let a = forms.gather(DType::F32, 2, 1, 1);
        let b = forms.gather(DType::F32, 2, 1, 1);
        assert_eq!(
            (a.as_str(), b.as_str()),
            ("gather_r2_a1_i1", "gather_r2_a1_i1")
        );
        assert_eq!(forms.text().matches("def gather_r2_a1_i1(").count(), 1);
        let p = program(&forms);
        let x = Tensor::random(DType::F32, &[2, 3], 1);
        for bad in [3, -4] {
            let i = Tensor::from_i64(DType::I64, &[1], vec![bad]);
            let e = run(&p, &a, &[("X", &x), ("I", &i)]).unwrap_err();
            assert!(e.contains("out of bounds"), "index {bad}: {e}");
        }
    }

    #[test]
    fn no_prelude_def_is_named_like_a_generated_family() {
        for line in crate::PRELUDE.lines() {
            if let Some(name) = line.strip_prefix("def ") {
                assert!(!FAMILIES.iter().any(|f| name.starts_with(f)), "{line}");
            }
        }
    }
}
