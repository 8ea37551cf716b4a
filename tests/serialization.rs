//! The byte format: round trips, truncation at every point, invalid and non-canonical points
//! (hostile length fields: `tests/hostile_lengths.rs`, with a counting allocator).

mod circuits;

use blstrs::G1Affine;
use circuits::Squares;
use group::prime::PrimeCurveAffine;
use group::GroupEncoding;
use preemptible_groth16::groth16::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
    Parameters, Proof, ReadError, VerifyingKey,
};
use rand::{Rng, SeedableRng};
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

/// What reading a spoilt encoding must give.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Not an encoding of any point.
    Invalid,
    /// The encoding of a point, but not the one writing it gives: only the canonical check stops it.
    NonCanonical,
    /// The canonical encoding of the identity, where the identity is not allowed.
    Infinity,
}

/// How a spoilt encoding starts: the first byte (the flags: 0x80 compressed, 0x40 infinity,
/// 0x20 sign of y) changed, or the whole slot zeroed and the first byte set.
#[derive(Clone, Copy)]
enum Head {
    Or(u8),
    And(u8),
    Only(u8),
}

/// What happens to the rest of the slot: the second half filled with garbage, or the last byte
/// set to 1.
#[derive(Clone, Copy)]
enum Tail {
    Keep,
    Garbage,
    LastOne,
}

/// One way to spoil a point's encoding, and what reading it must give.
type Spoil = (&'static str, Head, Tail, Expect);

fn apply(p: &mut [u8], head: Head, tail: Tail) {
    match head {
        Head::Or(flags) => p[0] |= flags,
        Head::And(mask) => p[0] &= mask,
        Head::Only(first) => {
            p.fill(0);
            p[0] = first;
        }
    }
    let len = p.len();
    match tail {
        Tail::Keep => {}
        Tail::Garbage => p[len / 2..].fill(0x5a),
        Tail::LastOne => p[len - 1] = 1,
    }
}

/// Spoilt versions of an uncompressed slot (96 bytes in G1, 192 in G2). blst decodes a
/// compressed encoding (its first half) found there and ignores the rest of the slot: only the
/// canonical check stops those.
#[rustfmt::skip]
const UNCOMPRESSED_SPOILS: [Spoil; 9] = [
    ("compression flag set", Head::Or(0x80), Tail::Keep, Expect::NonCanonical),
    ("compression and sign flags set", Head::Or(0xa0), Tail::Keep, Expect::NonCanonical),
    ("compressed, garbage after", Head::Or(0x80), Tail::Garbage, Expect::NonCanonical),
    ("compressed identity, garbage after", Head::Only(0xc0), Tail::Garbage, Expect::NonCanonical),
    ("compressed identity, zeros after", Head::Only(0xc0), Tail::Keep, Expect::NonCanonical),
    ("infinity flag set on a point", Head::Or(0x40), Tail::Keep, Expect::Invalid),
    ("sign flag set", Head::Or(0x20), Tail::Keep, Expect::Invalid),
    ("identity with a nonzero byte", Head::Only(0x40), Tail::LastOne, Expect::Invalid),
    ("identity without its flag", Head::Only(0), Tail::Keep, Expect::Invalid),
];

/// Spoilt versions of a compressed slot (48 bytes in G1, 96 in G2), where the identity is not
/// allowed (a proof).
#[rustfmt::skip]
const COMPRESSED_SPOILS: [Spoil; 6] = [
    ("compression flag cleared", Head::And(0x7f), Tail::Keep, Expect::Invalid),
    ("infinity flag set on a point", Head::Or(0x40), Tail::Keep, Expect::Invalid),
    ("identity with a nonzero byte", Head::Only(0xc0), Tail::LastOne, Expect::Invalid),
    ("identity with the sign flag", Head::Only(0xe0), Tail::Keep, Expect::Invalid),
    ("identity without the compression flag", Head::Only(0x40), Tail::Keep, Expect::Invalid),
    ("identity", Head::Only(0xc0), Tail::Keep, Expect::Infinity),
];

/// A point's place in an encoding.
#[derive(Clone, Copy, Debug)]
struct Slot {
    section: &'static str,
    index: usize,
    at: usize,
    len: usize,
}

impl Slot {
    const fn new(section: &'static str, index: usize, at: usize, len: usize) -> Slot {
        Slot {
            section,
            index,
            at,
            len,
        }
    }
}

/// Every point of a parameter file, in order (the verifying key's are a key's own slots).
fn slots(params: &Parameters) -> Vec<Slot> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut push = |section, index, len, at: &mut usize| {
        out.push(Slot::new(section, index, *at, len));
        *at += len;
    };
    for (section, len) in [
        ("vk.alpha_g1", 96),
        ("vk.beta_g1", 96),
        ("vk.beta_g2", 192),
        ("vk.gamma_g2", 192),
        ("vk.delta_g1", 96),
        ("vk.delta_g2", 192),
    ] {
        push(section, 0, len, &mut at);
    }
    for (section, count, len) in [
        ("vk.ic", params.vk.ic.len(), 96),
        ("h", params.h.len(), 96),
        ("l", params.l.len(), 96),
        ("a", params.a.len(), 96),
        ("b_g1", params.b_g1.len(), 96),
        ("b_g2", params.b_g2.len(), 192),
    ] {
        at += 4;
        for index in 0..count {
            push(section, index, len, &mut at);
        }
    }
    out
}

/// The slots of a proof: `a`, `b`, `c` compressed.
const PROOF_SLOTS: [Slot; 3] = [
    Slot::new("proof.a", 0, 0, 48),
    Slot::new("proof.b", 0, 48, 96),
    Slot::new("proof.c", 0, 144, 48),
];

/// Spoils `slot` of `bytes` each way and checks that `read` fails as expected there.
fn assert_spoils_rejected<T: std::fmt::Debug>(
    bytes: &[u8],
    slot: Slot,
    spoils: &[Spoil],
    read: impl Fn(&[u8]) -> Result<T, ReadError>,
) {
    for &(what, head, tail, expect) in spoils {
        let mut bad = bytes.to_vec();
        apply(&mut bad[slot.at..slot.at + slot.len], head, tail);
        assert_ne!(bad, bytes, "{what}: {slot:?} unchanged");
        let got = match read(&bad) {
            Err(ReadError::InvalidPoint { section, index }) => (Expect::Invalid, section, index),
            Err(ReadError::NonCanonicalPoint { section, index }) => {
                (Expect::NonCanonical, section, index)
            }
            Err(ReadError::PointAtInfinity { section, index }) => {
                (Expect::Infinity, section, index)
            }
            other => panic!("{what}: {slot:?}: {other:?}"),
        };
        assert_eq!(got, (expect, slot.section, slot.index), "{what}: {slot:?}");
    }
}

#[test]
fn non_canonical_points_are_rejected() {
    let (params, proof, _) = setup();
    let bytes = bytes_of(&params);
    let all = slots(&params);
    let find = |section, index| {
        *all.iter()
            .find(|s| s.section == section && s.index == index)
            .unwrap()
    };
    // G1 and G2 query points, checked and unchecked.
    for slot in [find("h", 1), find("a", 0), find("b_g2", 1)] {
        for checked in [true, false] {
            assert_spoils_rejected(&bytes, slot, &UNCOMPRESSED_SPOILS, |b| {
                Parameters::read(b, checked)
            });
        }
    }
    // The verifying key's points, alone and at the head of a parameter file. `vk.ic` may hold
    // the identity, so a compressed identity there is stopped only by the canonical check.
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    for slot in [
        find("vk.alpha_g1", 0),
        find("vk.delta_g2", 0),
        find("vk.ic", 0),
    ] {
        assert_spoils_rejected(&vk, slot, &UNCOMPRESSED_SPOILS, |b| VerifyingKey::read(b));
        assert_spoils_rejected(&bytes, slot, &UNCOMPRESSED_SPOILS, |b| {
            Parameters::read(b, false)
        });
    }
    // A proof's compressed points.
    for slot in PROOF_SLOTS {
        assert_spoils_rejected(&proof.to_bytes(), slot, &COMPRESSED_SPOILS, |b| {
            Proof::read(b)
        });
    }
}

/// Reads parameters from the front of `bytes`; on success returns them and the bytes consumed.
fn read_prefix(bytes: &[u8], checked: bool) -> Option<(Parameters, usize)> {
    let mut rest = bytes;
    let params = Parameters::read(&mut rest, checked).ok()?;
    Some((params, bytes.len() - rest.len()))
}

/// Sets flag bits, clears them, or fills part of `slot` in `bytes`, at random.
fn mutate_slot(bytes: &mut [u8], slot: Slot, rng: &mut ChaCha20Rng) {
    let p = &mut bytes[slot.at..slot.at + slot.len];
    match rng.gen_range(0..4) {
        0 => p[0] |= [0x80, 0x40, 0x20, 0xa0, 0xc0, 0xe0, 0x60][rng.gen_range(0..7)],
        1 => p[0] &= 0x1f,
        2 => p[0] ^= 1 << rng.gen_range(0..8),
        _ => p[rng.gen_range(1..slot.len)] = rng.gen(),
    }
    if rng.gen_bool(0.5) {
        let from = rng.gen_range(1..slot.len);
        let fill = if rng.gen_bool(0.5) { 0 } else { rng.gen() };
        p[from..].fill(fill);
    }
}

/// Asserts `written == read`, naming the first byte where they differ (not printing both).
fn assert_same_bytes(written: &[u8], read: &[u8], what: &str) {
    if written != read {
        let at = written.iter().zip(read).position(|(w, r)| w != r);
        panic!(
            "{what}: writing back gives other bytes (first difference at {at:?}, lengths {} and {})",
            written.len(),
            read.len()
        );
    }
}

/// `write(read(bytes)) == bytes` whenever `read` succeeds: for valid files, keys and proofs of
/// several circuits, and for many encodings spoilt at random in their flag bits and tails.
#[test]
fn reading_is_canonical() {
    let rng = &mut ChaCha20Rng::seed_from_u64(27);
    let (mut files, mut proofs, mut accepted) = (0, 0, 0);
    for n in [1, 2, 6, 14, 30] {
        let c = Squares { n };
        let params = generate_random_parameters(c, rng).unwrap();
        let bytes = bytes_of(&params);
        let mut vk = Vec::new();
        params.vk.write(&mut vk).unwrap();
        let mut valid_proofs = Vec::new();
        for _ in 0..8 {
            valid_proofs.push(create_random_proof(c, &params, rng).unwrap().to_bytes());
        }
        let all = slots(&params);
        for round in 0..400 {
            // The valid file first, then spoilt ones; a key is the file's head.
            let (mut p, checked) = (bytes.clone(), round % 4 == 0);
            for _ in 0..if round == 0 { 0 } else { rng.gen_range(1..3) } {
                mutate_slot(&mut p, all[rng.gen_range(0..all.len())], rng);
            }
            if let Some((read, consumed)) = read_prefix(&p, checked) {
                accepted += 1;
                let what = format!("parameters, n = {n}, round {round}");
                assert_same_bytes(&bytes_of(&read), &p[..consumed], &what);
            }
            if let Ok(read) = VerifyingKey::read(&p[..vk.len()]) {
                let mut again = Vec::new();
                read.write(&mut again).unwrap();
                assert_same_bytes(
                    &again,
                    &p[..vk.len()],
                    &format!("key, n = {n}, round {round}"),
                );
            }
            files += 1;
        }
        for valid in &valid_proofs {
            for round in 0..100 {
                let mut p = *valid;
                if round > 0 {
                    mutate_slot(&mut p, PROOF_SLOTS[rng.gen_range(0..3)], rng);
                }
                if let Ok(read) = Proof::read(&p[..]) {
                    let mut written = Vec::new();
                    read.write(&mut written).unwrap();
                    assert_same_bytes(&written, &p, &format!("proof, n = {n}, round {round}"));
                }
                proofs += 1;
            }
        }
    }
    eprintln!("{files} parameter files ({accepted} read) and {proofs} proofs");
    assert!(accepted >= 5, "the valid files read back");
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

/// Writes valid encodings as seeds for the fuzz targets into the directory `PG16_FUZZ_SEEDS`
/// names (`scripts/fuzz.sh` runs it); not a test of its own.
#[test]
#[ignore = "writes fuzz seeds: scripts/fuzz.sh runs it with --ignored"]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("PG16_FUZZ_SEEDS") else {
        panic!("PG16_FUZZ_SEEDS names no directory to write the seeds in");
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

/// bellperson's `Proof::size` and `Proof::read_many`: proofs one after another, exactly `count`.
#[test]
fn many_proofs_read_back_and_wrong_lengths_are_errors() {
    let (_, proof, _) = setup();
    assert_eq!(Proof::size(), 192);
    let mut bytes = Vec::new();
    for _ in 0..5 {
        proof.write(&mut bytes).unwrap();
    }
    assert_eq!(Proof::read_many(&bytes, 5).unwrap(), vec![proof; 5]);
    assert_eq!(Proof::read_many(&[], 0).unwrap(), vec![]);
    assert!(matches!(
        Proof::read_many(&bytes[..bytes.len() - 1], 5),
        Err(ReadError::Truncated { .. })
    ));
    assert!(matches!(
        Proof::read_many(&bytes, 4),
        Err(ReadError::Malformed(_))
    ));
    assert!(Proof::read_many(&bytes, usize::MAX).is_err());
    // A bad point in the fourth proof fails the whole read.
    bytes[3 * 192 + 50] ^= 0x40;
    assert!(Proof::read_many(&bytes, 5).is_err());
}
