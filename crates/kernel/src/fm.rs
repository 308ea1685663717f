//! Fourier–Motzkin elimination over integer points: proves that a system of
//! affine inequalities has no integer solution.
//!
//! Each row is `constant + sum(coefs[i] * x[i]) >= 0` over integer
//! unknowns. Variables are eliminated one at a time: every row with a
//! positive coefficient of the variable is combined with every row with a
//! negative one so that the variable cancels (positive multiples of valid
//! inequalities are valid, so every derived row holds at every solution).
//! A derived row without variables and with a negative constant shows that
//! there is no solution. After each step a row is divided by the gcd of its
//! coefficients and its constant rounded down, which is exact for integer
//! unknowns (`2x - 1 >= 0` becomes `x - 1 >= 0`) and makes the test
//! stronger than the rational one.
//!
//! Guarantees: `true` is a proof (no integer point satisfies the rows);
//! `false` means only that no proof was found: the system may have a
//! solution, or the row count passed [`MAX_ROWS`], or a coefficient would
//! overflow. Never panics.

/// An affine inequality `constant + sum(coefs[i] * x[i]) >= 0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Row {
    pub constant: i128,
    pub coefs: Vec<i128>,
}

/// The most rows kept while eliminating; beyond it the search gives up.
const MAX_ROWS: usize = 4096;

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Divides the row by the gcd of its coefficients, rounding the constant
/// down. `None` for a row without variables.
fn normalize(mut r: Row) -> Option<Row> {
    let g = r.coefs.iter().fold(0, |g, c| gcd(g, *c));
    if g == 0 {
        return None;
    }
    for c in &mut r.coefs {
        *c /= g;
    }
    r.constant = r.constant.div_euclid(g);
    Some(r)
}

/// Whether no integer point satisfies every row.
pub(crate) fn infeasible(given: Vec<Row>) -> bool {
    let n = given.first().map_or(0, |r| r.coefs.len());
    let mut rows: Vec<Row> = Vec::with_capacity(given.len());
    for r in given {
        match normalize(r.clone()) {
            Some(r) => rows.push(r),
            None if r.constant < 0 => return true,
            None => {}
        }
    }
    for v in 0..n {
        let (mut pos, mut neg, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for r in rows {
            match r.coefs[v].signum() {
                1 => pos.push(r),
                -1 => neg.push(r),
                _ => rest.push(r),
            }
        }
        if pos
            .len()
            .saturating_mul(neg.len())
            .saturating_add(rest.len())
            > MAX_ROWS
        {
            return false;
        }
        for p in &pos {
            for q in &neg {
                let (a, b) = (p.coefs[v], -q.coefs[v]);
                let Some(r) = combine(p, b, q, a) else {
                    return false;
                };
                match normalize(r.clone()) {
                    Some(r) => rest.push(r),
                    None if r.constant < 0 => return true,
                    None => {}
                }
            }
        }
        rest.sort_by(|x, y| (&x.coefs, x.constant).cmp(&(&y.coefs, y.constant)));
        // Of rows with the same coefficients only the tightest (smallest
        // constant) matters.
        rest.dedup_by(|later, kept| later.coefs == kept.coefs);
        rows = rest;
    }
    false
}

/// `kp * p + kq * q`, or `None` on overflow.
fn combine(p: &Row, kp: i128, q: &Row, kq: i128) -> Option<Row> {
    let lin = |x: i128, y: i128| x.checked_mul(kp)?.checked_add(y.checked_mul(kq)?);
    Some(Row {
        constant: lin(p.constant, q.constant)?,
        coefs: p
            .coefs
            .iter()
            .zip(&q.coefs)
            .map(|(x, y)| lin(*x, *y))
            .collect::<Option<Vec<_>>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(constant: i128, coefs: &[i128]) -> Row {
        Row {
            constant,
            coefs: coefs.to_vec(),
        }
    }

    #[test]
    fn contradictory_bounds_are_infeasible() {
        // x >= 3 and x <= 2.
        assert!(infeasible(vec![row(-3, &[1]), row(2, &[-1])]));
        // x >= 2 and x <= 2 has the solution x = 2.
        assert!(!infeasible(vec![row(-2, &[1]), row(2, &[-1])]));
    }

    #[test]
    fn padding_constraints_imply_the_bounds() {
        // 0 <= h + r - 1 <= 7 with h in [0, 7], r in [0, 2]; the negated
        // goal h + r - 1 >= 8 has no solution.
        let rows = vec![
            row(0, &[1, 0]),
            row(7, &[-1, 0]),
            row(0, &[0, 1]),
            row(2, &[0, -1]),
            row(-1, &[1, 1]),
            row(8, &[-1, -1]),
            row(-9, &[1, 1]),
        ];
        assert!(infeasible(rows));
    }

    #[test]
    fn integer_rounding_is_stronger_than_the_rationals() {
        // t = 2q with t = 1: q = 1/2 solves it over the rationals, and no
        // integer does.
        let t_is_2q = [row(0, &[1, -2]), row(0, &[-1, 2])];
        let mut rows = t_is_2q.to_vec();
        rows.extend([row(-1, &[1, 0]), row(1, &[-1, 0])]);
        assert!(infeasible(rows));
        // With 1 <= t <= 2, t = 2 and q = 1 solve it.
        let mut rows = t_is_2q.to_vec();
        rows.extend([row(-1, &[1, 0]), row(2, &[-1, 0])]);
        assert!(!infeasible(rows));
    }
}
