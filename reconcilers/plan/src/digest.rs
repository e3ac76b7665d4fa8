//! Digests as jackin writes them: lowercase hex, shortened where a name or
//! a tag carries them.

use sha2::{Digest, Sha256};

/// `bytes` as lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    // Two table lookups a byte, not a `format!` each: an apply of 500
    // documents takes a thousand digests.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// The SHA-256 of `data`, its first `len` bytes in hex (`2 * len`
/// characters; the whole digest when `len` is 32 or more).
pub fn sha256_hex(data: &[u8], len: usize) -> String {
    let digest = Sha256::digest(data);
    hex(&digest[..len.min(digest.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_digest_is_the_start_of_the_whole() {
        let whole = sha256_hex(b"jackin", 32);
        assert_eq!(whole.len(), 64);
        assert_eq!(sha256_hex(b"jackin", 4), whole[..8]);
        assert_eq!(hex(&[0x00, 0xab, 0x0f, 0xf0, 0x9a]), "00ab0ff09a");
    }
}
