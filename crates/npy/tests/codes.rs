//! Narrow floats in `.npy` files: `float16` as numpy's `<f2`, the types
//! numpy lacks as raw codes that read back only as the type expected.

use ir::DType;
use tensor::Tensor;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-npy-codes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn narrow_floats_write_and_read_back_as_their_codes() {
    let xs = [1.5, -0.25, 65504.0, f64::INFINITY];
    for t in [DType::F16, DType::BF16, DType::F8E5M2] {
        let tensor = Tensor::from_f64(t, &[2, 2], xs.to_vec());
        let path = scratch(&format!("{t}.npy"));
        npy::write(&path, &tensor).unwrap();
        let header = std::fs::read(&path).unwrap();
        let descr = if t == DType::F16 { "'<f2'" } else { "'|V" };
        assert!(
            String::from_utf8_lossy(&header).contains(descr),
            "{t} is written as {descr}"
        );
        let back = npy::read_as(&path, Some(t)).unwrap();
        assert_eq!(back.dtype(), t);
        assert_eq!(back.shape(), &[2, 2]);
        assert_eq!(back.values(), tensor.values(), "{t}");
    }
}

#[test]
fn raw_codes_read_only_as_a_narrow_float_of_their_width() {
    let tensor = Tensor::from_f64(DType::BF16, &[3], vec![1.0, 2.0, 3.0]);
    let path = scratch("raw.npy");
    npy::write(&path, &tensor).unwrap();
    let no_type = npy::read(&path).unwrap_err();
    assert!(
        no_type.contains("raw 2-byte elements (`|V2`) of no named type"),
        "{no_type}"
    );
    let wrong = npy::read_as(&path, Some(DType::F32)).unwrap_err();
    assert!(wrong.contains("which are not float32"), "{wrong}");
    let narrower = npy::read_as(&path, Some(DType::F8E5M2)).unwrap_err();
    assert!(narrower.contains("which are not float8e5m2"), "{narrower}");
    // float16 codes are numpy's own `<f2`, whatever is expected.
    let half = Tensor::from_f64(DType::F16, &[1], vec![0.5]);
    npy::write(&path, &half).unwrap();
    assert_eq!(npy::read(&path).unwrap().dtype(), DType::F16);
}

#[test]
fn two_and_four_bit_integers_are_stored_as_their_low_bits() {
    let tensor = Tensor::from_i64(DType::I4, &[4], vec![-8, -1, 0, 7]);
    let path = scratch("int4.npy");
    npy::write(&path, &tensor).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // ml_dtypes' codes: -8 is 0b1000, -1 is 0b1111.
    assert_eq!(&bytes[bytes.len() - 4..], &[8, 15, 0, 7]);
    let back = npy::read_as(&path, Some(DType::I4)).unwrap();
    assert_eq!(back.to_i64_vec(), vec![-8, -1, 0, 7]);
    let unsigned = npy::read_as(&path, Some(DType::U4)).unwrap();
    assert_eq!(unsigned.to_i64_vec(), vec![8, 15, 0, 7]);
}
