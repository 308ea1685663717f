//! Comparing computed float outputs with a reference's (ONNX Runtime's, in
//! the fixture tests) where summation orders differ but NaN and the
//! infinities must be exactly where the reference has them.

/// The first element where `got` is not `want`: NaN on one side only, an
/// infinity on either side that the other does not equal, or finite values
/// further apart than `rel` times the larger of the element's magnitude
/// and the largest finite magnitude in `want` (so that an infinity in the
/// reference does not make every difference small). `None` when they agree
/// (a length mismatch is the first missing element).
pub fn mismatch(got: &[f64], want: &[f64], rel: f64) -> Option<usize> {
    let scale = want
        .iter()
        .filter(|x| x.is_finite())
        .fold(1e-6f64, |m, x| m.max(x.abs()));
    let differ = |a: f64, b: f64| {
        if a.is_nan() || b.is_nan() {
            a.is_nan() != b.is_nan()
        } else if a.is_infinite() || b.is_infinite() {
            a != b
        } else {
            (a - b).abs() > rel * scale.max(b.abs())
        }
    };
    (0..got.len().max(want.len()))
        .find(|&k| k >= got.len() || k >= want.len() || differ(got[k], want[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_and_infinities_must_match_exactly_and_finite_values_closely() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let want = [nan, inf, -inf, 1000.0, 0.0];
        assert_eq!(mismatch(&want, &want, 1e-4), None);
        assert_eq!(
            mismatch(&[nan, inf, -inf, 1000.05, 0.05], &want, 1e-4),
            None
        );
        assert_eq!(
            mismatch(&[0.0, inf, -inf, 1000.0, 0.0], &want, 1e-4),
            Some(0)
        );
        assert_eq!(
            mismatch(&[nan, nan, -inf, 1000.0, 0.0], &want, 1e-4),
            Some(1)
        );
        assert_eq!(
            mismatch(&[nan, inf, inf, 1000.0, 0.0], &want, 1e-4),
            Some(2)
        );
        assert_eq!(
            mismatch(&[nan, inf, -inf, 1000.0, 1.0], &want, 1e-4),
            Some(4)
        );
        assert_eq!(
            mismatch(&[nan, inf, -inf, 1000.0, nan], &want, 1e-4),
            Some(4)
        );
        assert_eq!(mismatch(&[nan], &want, 1e-4), Some(1));
    }
}
