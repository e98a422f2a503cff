//! The forwarding scan's container skip, 64 bytes at a time: each block is classified once
//! into bit masks (quotes, backslashes, brackets; SSE2 on x86-64 through `safe_arch`, a byte
//! loop elsewhere), strings are found by a prefix XOR of the quote mask, and only the brackets
//! outside strings are visited one by one. A block inside a long string without a quote takes
//! one test for quotes instead of the masks. Escaped quotes are found by the parity of
//! backslash runs, also on the masks; a block where a backslash falls outside a string (never
//! in valid JSON) is walked byte by byte instead, so the result is exactly the byte walk's
//! (the tests compare the two): a string ends at the next quote no backslash escapes, brackets
//! are matched by kind up to 64 deep, and nothing is validated.

/// Bytes classified at once: one bit per byte in a `u64` mask.
const BLOCK: usize = 64;

/// Most containers open at once, as the byte walk allows.
const MAX_DEPTH: u32 = 64;

/// Where one block's bytes of interest are, one bit per byte (bit `i` is byte `i`).
struct Masks {
    quotes: u64,
    backslashes: u64,
    /// `{`, `[`, `}` and `]`, in one mask: which of them a bracket is, the stack reads from its
    /// byte, so the two comparisons are ORed in the register and moved out once.
    brackets: u64,
}

/// Open containers: one bit per level, set for an object.
struct Stack {
    kinds: u64,
    depth: u32,
}

impl Stack {
    /// Takes the bracket `byte`; `Err(())` on a mismatch or too deep, `Ok(true)` when it closed
    /// the outermost container.
    #[inline(always)]
    fn bracket(&mut self, byte: u8) -> Result<bool, ()> {
        if byte == b'{' || byte == b'[' {
            if self.depth == MAX_DEPTH {
                return Err(());
            }
            self.kinds = self.kinds << 1 | u64::from(byte == b'{');
            self.depth += 1;
            return Ok(false);
        }
        if (self.kinds & 1 == 1) != (byte == b'}') {
            return Err(());
        }
        self.kinds >>= 1;
        self.depth -= 1;
        Ok(self.depth == 0)
    }
}

/// Past the container whose opening bracket is at `at` (`{` or `[`, which the caller checked):
/// past its matching bracket, or `None` when it does not end in `bytes`, a bracket closes one
/// of the other kind, or it nests deeper than 64.
pub(super) fn skip_container(bytes: &[u8], at: usize) -> Option<usize> {
    let mut stack = Stack { kinds: 0, depth: 0 };
    // All ones while a string is open at the end of the previous block.
    let mut in_string = 0u64;
    // The previous block ended in a run of backslashes of odd length inside a string: its
    // first byte is escaped.
    let mut escaped = false;
    let mut base = at;
    while base < bytes.len() {
        // A whole block that begins inside a string and holds no quote is string to its end
        // (a long text's lines, its `\n` escapes and all): one test for quotes skips it, about
        // 20 instructions where the masks and escapes cost some 150. Its brackets are text,
        // and as it does not end in a backslash the next block's first byte is not escaped; a
        // block that ends in one takes the masks, which count the run. A loop of its own, as
        // a long string is many such blocks in a row.
        if in_string != 0 {
            while let Some(block) = bytes.get(base..base + BLOCK) {
                let block: &[u8; BLOCK] = block.try_into().expect("a block");
                if block[BLOCK - 1] == b'\\' || !quote_free(block) {
                    break;
                }
                escaped = false;
                base += BLOCK;
            }
            if base == bytes.len() {
                break;
            }
        }
        let (masks, block) = masks_at(bytes, base);
        let strings = if masks.backslashes == 0 && !escaped {
            // The common block: no escape, so every quote opens or closes a string.
            prefix_xor(masks.quotes) ^ in_string
        } else {
            let carried = escaped;
            let escaped_bytes = escaped_by_backslashes(masks.backslashes, &mut escaped);
            let strings = prefix_xor(masks.quotes & !escaped_bytes) ^ in_string;
            // A backslash outside a string (never in valid JSON) escapes nothing in the byte
            // walk, unlike in the masks: such a block is walked byte by byte.
            if masks.backslashes & !strings != 0 {
                let ((open, escapes_next), end) =
                    walk_block(&mut stack, block, in_string != 0, carried)?;
                if let Some(lane) = end {
                    return Some(base + lane + 1);
                }
                in_string = if open { u64::MAX } else { 0 };
                escaped = escapes_next;
                base += BLOCK;
                continue;
            }
            strings
        };
        // The quote that opens a string is inside it and the one that closes it is not, so no
        // quote is a bracket either way; an escaped byte is inside its string.
        let mut brackets = masks.brackets & !strings;
        while brackets != 0 {
            let lane = brackets.trailing_zeros() as usize;
            brackets &= brackets - 1;
            if stack.bracket(block[lane]).ok()? {
                return Some(base + lane + 1);
            }
        }
        in_string = ((strings as i64) >> 63) as u64;
        base += BLOCK;
    }
    None
}

/// One block walked byte by byte from `open` (a string is open) and `escaped` (its first byte
/// is escaped): whether a string is open and the next byte escaped after it, and the lane of
/// the bracket that closed the outermost container, if one did; `None` on a mismatch.
fn walk_block(
    stack: &mut Stack,
    block: &[u8],
    mut open: bool,
    mut escaped: bool,
) -> Option<((bool, bool), Option<usize>)> {
    for (lane, &byte) in block.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if open {
            match byte {
                b'"' => open = false,
                b'\\' => escaped = true,
                _ => {}
            }
        } else {
            match byte {
                b'"' => open = true,
                // The guard takes the bracket (a mismatch ends the walk); only the one that
                // closes the outermost container takes the arm.
                b'{' | b'[' | b'}' | b']' if stack.bracket(byte).ok()? => {
                    return Some(((open, escaped), Some(lane)));
                }
                _ => {}
            }
        }
    }
    Some(((open, escaped), None))
}

/// The bytes a backslash escapes, one bit per byte: the byte after each run of backslashes of
/// odd length (simdjson's odd-backslash-sequence arithmetic). `carry` says on entry whether
/// the previous block ended in such a run (so that this block's first byte is escaped), and on
/// return whether this one does.
#[inline(always)]
fn escaped_by_backslashes(backslashes: u64, carry: &mut bool) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    const ODD: u64 = !EVEN;
    let carried = u64::from(*carry);
    if backslashes == 0 {
        *carry = false;
        return carried;
    }
    let starts = backslashes & !(backslashes << 1);
    // A run at bit 0 after an odd run of the previous block starts one byte later, at an
    // odd position.
    let even_start_mask = EVEN ^ carried;
    let even_starts = starts & even_start_mask;
    let odd_starts = starts & !even_start_mask;
    let even_carries = backslashes.wrapping_add(even_starts);
    let (odd_carries, overflowed) = backslashes.overflowing_add(odd_starts);
    let odd_carries = odd_carries | carried;
    *carry = overflowed;
    let even_start_odd_end = even_carries & !backslashes & ODD;
    let odd_start_even_end = odd_carries & !backslashes & EVEN;
    even_start_odd_end | odd_start_even_end
}

/// The masks of the (up to) 64 bytes at `base`, and those bytes. The last block is classified
/// as the last 64 bytes of `bytes` with the masks shifted down, so that nothing is copied;
/// only a container on a line shorter than a block is copied, padded with spaces.
#[inline(always)]
fn masks_at(bytes: &[u8], base: usize) -> (Masks, &[u8]) {
    if let Some(block) = bytes.get(base..base + BLOCK) {
        return (classify(block.try_into().expect("a block")), block);
    }
    let block = &bytes[base..];
    match bytes.len().checked_sub(BLOCK) {
        Some(start) => {
            let shift = base - start;
            let masks = classify(bytes[start..].try_into().expect("a block"));
            let masks = Masks {
                quotes: masks.quotes >> shift,
                backslashes: masks.backslashes >> shift,
                brackets: masks.brackets >> shift,
            };
            (masks, block)
        }
        None => {
            let mut padded = [b' '; BLOCK];
            padded[..block.len()].copy_from_slice(block);
            (classify(&padded), block)
        }
    }
}

/// Bit `i` set when an odd number of bits `0..=i` of `bits` are: with quotes in, the bytes from
/// each opening quote up to its closing one.
#[inline(always)]
fn prefix_xor(mut bits: u64) -> u64 {
    bits ^= bits << 1;
    bits ^= bits << 2;
    bits ^= bits << 4;
    bits ^= bits << 8;
    bits ^= bits << 16;
    bits ^= bits << 32;
    bits
}

/// SSE2 (every x86-64 has it), sixteen bytes per comparison: `x | 0x20` turns `[` and `]` into
/// `{` and `}` and nothing else into either.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn classify(block: &[u8; BLOCK]) -> Masks {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let mut masks = Masks {
        quotes: 0,
        backslashes: 0,
        brackets: 0,
    };
    let quote = set_splat_i8_m128i(b'"' as i8);
    let backslash = set_splat_i8_m128i(b'\\' as i8);
    let case = set_splat_i8_m128i(0x20);
    let open = set_splat_i8_m128i(b'{' as i8);
    let close = set_splat_i8_m128i(b'}' as i8);
    let bits = |found| u64::from(move_mask_i8_m128i(found) as u16);
    // Most blocks have no backslash: their four comparisons are ORed and moved out once.
    let mut backslashes = [set_splat_i8_m128i(0); 4];
    let mut any_backslash = set_splat_i8_m128i(0);
    for (n, chunk) in block.chunks_exact(16).enumerate() {
        let bytes = load_unaligned_m128i(chunk.try_into().expect("sixteen bytes"));
        let folded = bitor_m128i(bytes, case);
        let shift = n * 16;
        masks.quotes |= bits(cmp_eq_mask_i8_m128i(bytes, quote)) << shift;
        backslashes[n] = cmp_eq_mask_i8_m128i(bytes, backslash);
        any_backslash = bitor_m128i(any_backslash, backslashes[n]);
        let brackets = bitor_m128i(
            cmp_eq_mask_i8_m128i(folded, open),
            cmp_eq_mask_i8_m128i(folded, close),
        );
        masks.brackets |= bits(brackets) << shift;
    }
    if move_mask_i8_m128i(any_backslash) != 0 {
        for (n, &found) in backslashes.iter().enumerate() {
            masks.backslashes |= bits(found) << (n * 16);
        }
    }
    masks
}

/// Whether no byte of `block` is a quote: four comparisons folded into one mask.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn quote_free(block: &[u8; BLOCK]) -> bool {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let quote = set_splat_i8_m128i(b'"' as i8);
    let found = |at: usize| {
        let chunk = block[at..at + 16].try_into().expect("sixteen bytes");
        cmp_eq_mask_i8_m128i(load_unaligned_m128i(chunk), quote)
    };
    let any = bitor_m128i(
        bitor_m128i(found(0), found(16)),
        bitor_m128i(found(32), found(48)),
    );
    move_mask_i8_m128i(any) == 0
}

/// Elsewhere: a byte search.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn quote_free(block: &[u8; BLOCK]) -> bool {
    !block.contains(&b'"')
}

/// Elsewhere: the same masks, a byte at a time.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn classify(block: &[u8; BLOCK]) -> Masks {
    let mut masks = Masks {
        quotes: 0,
        backslashes: 0,
        brackets: 0,
    };
    for (lane, &byte) in block.iter().enumerate() {
        let bit = 1u64 << lane;
        match byte {
            b'"' => masks.quotes |= bit,
            b'\\' => masks.backslashes |= bit,
            b'{' | b'[' | b'}' | b']' => masks.brackets |= bit,
            _ => {}
        }
    }
    masks
}
