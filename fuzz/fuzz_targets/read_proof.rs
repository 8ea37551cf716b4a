//! A proof from arbitrary bytes: an error or a value, never a panic; a value's encoding is
//! exactly the 192 bytes it was read from (reading is canonical; bytes after them are left
//! unread).
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::Proof;

/// `a` (G1) | `b` (G2) | `c` (G1), compressed.
const PROOF_SIZE: usize = 48 + 96 + 48;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    if let Ok(proof) = Proof::read(&mut rest) {
        assert_eq!(data.len() - rest.len(), PROOF_SIZE, "a proof is 192 bytes");
        let mut encoded = Vec::new();
        proof.write(&mut encoded).expect("writing to a Vec");
        assert!(
            encoded == data[..PROOF_SIZE],
            "the proof has another encoding"
        );
        assert!(proof.to_bytes() == data[..PROOF_SIZE]);
    }
});
