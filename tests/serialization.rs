//! The byte format: round trips, truncation at every point, hostile lengths, invalid points.

mod circuits;

use blstrs::G1Affine;
use circuits::Squares;
use group::prime::PrimeCurveAffine;
use group::GroupEncoding;
use preemptible_groth16::groth16::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
    Parameters, Proof, ReadError, VerifyingKey,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn setup() -> (Parameters, Proof, Squares) {
    let rng = &mut ChaCha20Rng::seed_from_u64(11);
    let c = Squares { n: 5 };
    let params = generate_random_parameters(c, rng).unwrap();
    let proof = create_random_proof(c, &params, rng).unwrap();
    (params, proof, c)
}

fn bytes_of(params: &Parameters) -> Vec<u8> {
    let mut out = Vec::new();
    params.write(&mut out).unwrap();
    out
}

#[test]
fn round_trips() {
    let (params, proof, c) = setup();
    let bytes = bytes_of(&params);
    for checked in [true, false] {
        assert_eq!(Parameters::read(&bytes[..], checked).unwrap(), params);
    }
    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes).unwrap();
    assert_eq!(VerifyingKey::read(&vk_bytes[..]).unwrap(), params.vk);
    assert!(bytes.starts_with(&vk_bytes));

    let mut proof_bytes = Vec::new();
    proof.write(&mut proof_bytes).unwrap();
    assert_eq!(proof_bytes.len(), 192);
    assert_eq!(proof_bytes, proof.to_bytes());
    let read = Proof::read(&proof_bytes[..]).unwrap();
    assert_eq!(read, proof);
    let pvk = prepare_verifying_key(&VerifyingKey::read(&vk_bytes[..]).unwrap());
    assert!(verify_proof(&pvk, &read, &[c.output()]).unwrap());
}

#[test]
fn every_truncation_is_an_error() {
    let (params, proof, _) = setup();
    let bytes = bytes_of(&params);
    for len in 0..bytes.len() {
        match Parameters::read(&bytes[..len], false) {
            Err(ReadError::Truncated { .. }) => {}
            other => panic!("truncated to {len} of {} bytes: {other:?}", bytes.len()),
        }
    }
    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes).unwrap();
    for len in 0..vk_bytes.len() {
        assert!(
            VerifyingKey::read(&vk_bytes[..len]).is_err(),
            "vk truncated to {len}"
        );
    }
    let proof_bytes = proof.to_bytes();
    for len in 0..proof_bytes.len() {
        assert!(
            Proof::read(&proof_bytes[..len]).is_err(),
            "proof truncated to {len}"
        );
    }
    // The checked reader agrees at section boundaries and in the middle of points.
    for len in [0, 100, 577, 672, bytes.len() - 1] {
        assert!(Parameters::read(&bytes[..len], true).is_err());
    }
}

/// Offsets of the length fields of a parameter file: after the verifying key, then each query.
fn section_offsets(params: &Parameters) -> Vec<usize> {
    let vk_fixed = 96 * 3 + 192 * 3;
    let mut offsets = vec![vk_fixed];
    let mut at = vk_fixed + 4 + 96 * params.vk.ic.len();
    for (len, size) in [
        (params.h.len(), 96),
        (params.l.len(), 96),
        (params.a.len(), 96),
        (params.b_g1.len(), 96),
        (params.b_g2.len(), 192),
    ] {
        offsets.push(at);
        at += 4 + len * size;
    }
    offsets
}

#[test]
fn hostile_length_fields_fail_without_huge_allocation() {
    let (params, _, _) = setup();
    let bytes = bytes_of(&params);
    for offset in section_offsets(&params) {
        for claimed in [u32::MAX, 1 << 30, 1 << 20] {
            let mut bad = bytes.clone();
            bad[offset..offset + 4].copy_from_slice(&claimed.to_be_bytes());
            // Reading stops at the end of the bytes present; claiming 2^32 points of 96 bytes
            // would otherwise ask for 400 GiB.
            let err = Parameters::read(&bad[..], false).unwrap_err();
            assert!(
                matches!(
                    err,
                    ReadError::Truncated { .. }
                        | ReadError::InvalidPoint { .. }
                        | ReadError::Malformed(_)
                ),
                "offset {offset}: {err:?}"
            );
        }
    }
}

/// A point on the curve but outside the prime-order subgroup (found by decompressing small x).
fn point_outside_subgroup() -> G1Affine {
    for x in 1u8..=255 {
        let mut compressed = [0u8; 48];
        compressed[0] = 0x80; // compressed form, y's sign bit clear
        compressed[47] = x;
        if let Some(p) = Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(&compressed))
        {
            if !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
    }
    unreachable!("some small x gives a point outside the subgroup")
}

#[test]
fn invalid_points_are_rejected() {
    let (params, proof, _) = setup();
    let bytes = bytes_of(&params);
    let first_h = section_offsets(&params)[1] + 4;

    // Off the curve: flip a bit of the y coordinate.
    let mut off_curve = bytes.clone();
    off_curve[first_h + 95] ^= 1;
    for checked in [true, false] {
        assert!(matches!(
            Parameters::read(&off_curve[..], checked),
            Err(ReadError::InvalidPoint {
                section: "h",
                index: 0
            })
        ));
    }

    // On the curve, outside the subgroup: only the checked read can tell.
    let outsider = point_outside_subgroup();
    let mut small_order = bytes.clone();
    small_order[first_h..first_h + 96].copy_from_slice(&outsider.to_uncompressed());
    assert!(matches!(
        Parameters::read(&small_order[..], true),
        Err(ReadError::InvalidPoint { section: "h", .. })
    ));
    assert!(Parameters::read(&small_order[..], false).is_ok());

    // The point at infinity in a query.
    let mut infinity = bytes.clone();
    infinity[first_h..first_h + 96].copy_from_slice(&G1Affine::identity().to_uncompressed());
    assert!(matches!(
        Parameters::read(&infinity[..], false),
        Err(ReadError::PointAtInfinity { section: "h", .. })
    ));

    // A verifying key with delta at infinity would accept forgeries.
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    let delta_g1 = 96 * 2 + 192 * 2;
    vk[delta_g1..delta_g1 + 96].copy_from_slice(&G1Affine::identity().to_uncompressed());
    assert!(matches!(
        VerifyingKey::read(&vk[..]),
        Err(ReadError::PointAtInfinity { .. })
    ));

    // G2 points off the curve: in the B query, and the verifying key's beta.
    let first_b_g2 = section_offsets(&params)[5] + 4;
    let mut off_curve_g2 = bytes.clone();
    off_curve_g2[first_b_g2 + 191] ^= 1;
    for checked in [true, false] {
        assert!(matches!(
            Parameters::read(&off_curve_g2[..], checked),
            Err(ReadError::InvalidPoint {
                section: "b_g2",
                index: 0
            })
        ));
    }
    let mut vk_off_curve = Vec::new();
    params.vk.write(&mut vk_off_curve).unwrap();
    let beta_g2 = 96 * 2;
    vk_off_curve[beta_g2 + 191] ^= 1;
    assert!(matches!(
        VerifyingKey::read(&vk_off_curve[..]),
        Err(ReadError::InvalidPoint {
            section: "vk.beta_g2",
            ..
        })
    ));

    // A proof with a point outside the subgroup, or garbage.
    let mut p = proof.to_bytes();
    p[..48].copy_from_slice(outsider.to_bytes().as_ref());
    assert!(Proof::read(&p[..]).is_err());
    assert!(Proof::read(&[0xffu8; 192][..]).is_err());
}

#[test]
fn sections_that_do_not_fit_together_are_malformed() {
    let (params, _, _) = setup();
    let mut short_h = params.clone();
    short_h.h.pop();
    let bytes = bytes_of(&short_h);
    assert!(matches!(
        Parameters::read(&bytes[..], false),
        Err(ReadError::Malformed(_))
    ));
    let mut no_ic = params.vk.clone();
    no_ic.ic.clear();
    let mut bytes = Vec::new();
    no_ic.write(&mut bytes).unwrap();
    assert!(matches!(
        VerifyingKey::read(&bytes[..]),
        Err(ReadError::Malformed(_))
    ));
}

#[test]
fn errors_convert_to_io_errors() {
    let err: std::io::Error = Parameters::read(&[][..], false).unwrap_err().into();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
}

/// Writes valid encodings as seeds for the fuzz targets when `PG16_FUZZ_SEEDS` names a directory
/// (`scripts/fuzz.sh` does this); otherwise does nothing.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("PG16_FUZZ_SEEDS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let (params, proof, _) = setup();
    let write = |target: &str, bytes: &[u8]| {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("valid"), bytes).unwrap();
    };
    // The parameters target reads a flag byte first (checked or not).
    let mut p = vec![1u8];
    p.extend(bytes_of(&params));
    write("read_parameters", &p);
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    write("read_verifying_key", &vk);
    let mut pr = Vec::new();
    proof.write(&mut pr).unwrap();
    write("read_proof", &pr);
}
