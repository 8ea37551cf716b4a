//! A verifying key from arbitrary bytes: an error or a value, never a panic; a value's encoding
//! is exactly the bytes it was read from (reading is canonical; bytes after the key are left
//! unread and not compared).
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::VerifyingKey;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    if let Ok(vk) = VerifyingKey::read(&mut rest) {
        let consumed = &data[..data.len() - rest.len()];
        let mut encoded = Vec::new();
        vk.write(&mut encoded).expect("writing to a Vec");
        assert!(encoded == consumed, "the key has another encoding");
    }
});
