//! A proof from arbitrary bytes: an error or a value, never a panic; a value's encoding is the
//! 192 bytes it was read from (points have one compressed encoding).
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::Proof;

fuzz_target!(|data: &[u8]| {
    if let Ok(proof) = Proof::read(data) {
        let mut encoded = Vec::new();
        proof.write(&mut encoded).expect("writing to a Vec");
        assert_eq!(&encoded[..], &data[..encoded.len()], "a proof has one encoding");
    }
});
