//! A verifying key from arbitrary bytes: an error or a value, never a panic; a value read back
//! from its own encoding is the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::VerifyingKey;

fuzz_target!(|data: &[u8]| {
    if let Ok(vk) = VerifyingKey::read(data) {
        let mut encoded = Vec::new();
        vk.write(&mut encoded).expect("writing to a Vec");
        let again = VerifyingKey::read(&encoded[..]).expect("our own encoding reads back");
        assert!(again == vk, "a round trip changed the key");
    }
});
