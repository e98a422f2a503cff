//! Compact JSON for outgoing messages, byte for byte what `serde_json::to_writer` writes, with
//! a string escaper that tests sixteen bytes per step: serde_json's looks up every byte in a
//! table, ~10 instructions per byte, which made escaping a 1 KiB answer the largest single
//! cost of a round trip. Anything unusual (raw JSON, non-string map keys, an error) is handed
//! to serde_json instead, so the two can only ever agree.

use serde::Serialize;
use serde::ser::{self, Impossible};

/// Appends `value` as compact JSON; on error `out` is left as it was.
pub(crate) fn write<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    if value.serialize(Writer { out: &mut *out }).is_ok() {
        return Ok(());
    }
    out.truncate(start);
    fall_back(out, value)
}

#[cold]
#[inline(never)]
fn fall_back<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), serde_json::Error> {
    let start = out.len();
    let result = serde_json::to_writer(&mut *out, value);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Appends `s` as a JSON string.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if short_and_plain(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut run_start = 0;
    let mut i = 0;
    while let Some(at) = next_escape(bytes, i) {
        out.extend_from_slice(&bytes[run_start..at]);
        write_escape(out, bytes[at]);
        i = at + 1;
        run_start = i;
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

/// Whether a string of at most 16 bytes is free of bytes JSON must escape. Most strings
/// written are this short (member names, tags, ids); two overlapping words (or half-words)
/// test them without the byte loop that [`next_escape`] ends with.
#[inline]
pub(crate) fn short_and_plain(bytes: &[u8]) -> bool {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
    let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"));
    match bytes.len() {
        0..4 => !bytes
            .iter()
            .any(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\'),
        4..8 => escape_mask(u64::from(half(0)) | u64::from(half(bytes.len() - 4)) << 32) == 0,
        8..=16 => escape_mask(word(0)) | escape_mask(word(bytes.len() - 8)) == 0,
        _ => false,
    }
}

/// The first byte at or after `i` that JSON must escape.
#[inline]
pub(crate) fn next_escape(bytes: &[u8], i: usize) -> Option<usize> {
    let rest = bytes.get(i..)?;
    // Sixteen bytes per step: one branch for two words.
    let mut blocks = rest.chunks_exact(16);
    for (n, block) in (&mut blocks).enumerate() {
        let (low, high) = block.split_at(8);
        let low = escape_mask(u64::from_le_bytes(low.try_into().expect("eight bytes")));
        let high = escape_mask(u64::from_le_bytes(high.try_into().expect("eight bytes")));
        if low | high != 0 {
            let at = if low != 0 {
                low.trailing_zeros() / 8
            } else {
                8 + high.trailing_zeros() / 8
            };
            return Some(i + n * 16 + at as usize);
        }
    }
    let mut tail = blocks.remainder();
    if let Some((word, after)) = tail.split_first_chunk::<8>() {
        let mask = escape_mask(u64::from_le_bytes(*word));
        if mask != 0 {
            return Some(i + rest.len() - tail.len() + (mask.trailing_zeros() / 8) as usize);
        }
        tail = after;
    }
    let at = tail
        .iter()
        .position(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')?;
    Some(i + rest.len() - tail.len() + at)
}

/// A high bit set in each byte of `word` that is a control character, `"` or `\`. Only the
/// lowest set bit is exact (a borrow can flag a byte above a flagged one), and only it is used.
#[inline]
fn escape_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_bytes = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// serde_json's spelling of each escape.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// Not an error of the value's: this writer does not handle what came, serde_json will.
#[derive(Debug)]
struct Unhandled;

impl std::fmt::Display for Unhandled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Unhandled {}

impl ser::Error for Unhandled {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unhandled
    }
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    fn number<T: Serialize>(self, n: T) -> Result<(), Unhandled> {
        serde_json::to_writer(self.out, &n).map_err(|_| Unhandled)
    }

    fn open(self, head: &[u8], close: &'static [u8]) -> Compound<'a> {
        self.out.extend_from_slice(head);
        Compound {
            out: self.out,
            first: true,
            close,
        }
    }

    fn open_variant(self, variant: &str, open: u8, close: &'static [u8]) -> Compound<'a> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.extend_from_slice(&[b':', open]);
        Compound {
            out: self.out,
            first: true,
            close,
        }
    }
}

/// serde_json's private struct names for raw JSON and, with `arbitrary_precision`, numbers.
fn is_serde_json_token(name: &str) -> bool {
    name.starts_with("$serde_json::")
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Unhandled;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Unhandled> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Unhandled> {
        self.number(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Unhandled> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Unhandled> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Unhandled> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for byte in v {
            seq.serialize_element(byte)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Unhandled> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unhandled> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Unhandled> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unhandled> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unhandled> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unhandled> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Unhandled> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        value.serialize(Writer {
            out: &mut *self.out,
        })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Unhandled> {
        Ok(self.open(b"[", b"]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Unhandled> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Unhandled> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Unhandled> {
        Ok(self.open_variant(variant, b'[', b"]}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Unhandled> {
        Ok(self.open(b"{", b"}"))
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'a>, Unhandled> {
        if is_serde_json_token(name) {
            return Err(Unhandled);
        }
        Ok(self.open(b"{", b"}"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Unhandled> {
        Ok(self.open_variant(variant, b'{', b"}}"))
    }
}

struct Compound<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_> {
    fn separate(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unhandled> {
        self.separate();
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Unhandled> {
        self.separate();
        write_str(self.out, key);
        self.out.push(b':');
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn close(self) -> Result<(), Unhandled> {
        self.out.extend_from_slice(self.close);
        Ok(())
    }
}

// serde asks for one trait per kind of compound; each is an element list or a field list.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Unhandled;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unhandled> {
                self.element(value)
            }
            fn end(self) -> Result<(), Unhandled> {
                self.close()
            }
        }
    )*};
}

macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Unhandled;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Unhandled> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Unhandled> {
                self.close()
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);
fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Unhandled;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unhandled> {
        self.separate();
        key.serialize(Key {
            out: &mut *self.out,
        })
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unhandled> {
        self.out.push(b':');
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }
    fn end(self) -> Result<(), Unhandled> {
        self.close()
    }
}

/// A map key: strings (and what serializes as one) only; serde_json quotes numbers and
/// booleans, which are left to it.
struct Key<'a> {
    out: &'a mut Vec<u8>,
}

macro_rules! unhandled {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Unhandled> { Err(Unhandled) })*
    };
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = Unhandled;
    type SerializeSeq = Impossible<(), Unhandled>;
    type SerializeTuple = Impossible<(), Unhandled>;
    type SerializeTupleStruct = Impossible<(), Unhandled>;
    type SerializeTupleVariant = Impossible<(), Unhandled>;
    type SerializeMap = Impossible<(), Unhandled>;
    type SerializeStruct = Impossible<(), Unhandled>;
    type SerializeStructVariant = Impossible<(), Unhandled>;

    fn serialize_str(self, v: &str) -> Result<(), Unhandled> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Unhandled> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unhandled> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unhandled> {
        value.serialize(self)
    }

    unhandled! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_i128(i128); serialize_u8(u8); serialize_u16(u16);
        serialize_u32(u32); serialize_u64(u64); serialize_u128(u128); serialize_f32(f32);
        serialize_f64(f64); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Unhandled> {
        Err(Unhandled)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unhandled> {
        Err(Unhandled)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unhandled> {
        Err(Unhandled)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unhandled> {
        Err(Unhandled)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde_json::Value;
    use serde_json::value::RawValue;

    use super::*;

    fn ours<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = b"keep".to_vec();
        write(&mut out, value).unwrap();
        out.split_off(4)
    }

    fn same<T: Serialize + ?Sized>(value: &T) {
        let expected = serde_json::to_vec(value).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours(value)),
            String::from_utf8_lossy(&expected)
        );
    }

    #[test]
    fn strings_escape_as_serde_json_does() {
        for s in [
            "",
            "plain",
            "exactly8",
            "sixteen bytes ok",
            "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{0}i\u{1f}j\u{7f}k/l",
            "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}\u{9}",
            "long line with é, ß, 漢字 and 🦀 and then a quote \" at the end of a word",
            "\"\"\"\"\"\"\"\"\"",
        ] {
            same(s);
            same(&s.chars().collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_escape_searches_find_the_first_byte_at_every_length_and_offset() {
        let naive = |bytes: &[u8], i: usize| {
            let rest = bytes.get(i..)?;
            let at = rest
                .iter()
                .position(|&b| b < 0x20 || b == b'"' || b == b'\\')?;
            Some(i + at)
        };
        for len in 0..40 {
            let clean = vec![b'x'; len];
            assert_eq!(short_and_plain(&clean), len <= 16, "clean {len}");
            for i in 0..=len + 1 {
                assert_eq!(
                    next_escape(&clean, i),
                    naive(&clean, i),
                    "clean {len} from {i}"
                );
            }
            for (first, second) in (0..len).flat_map(|a| (a..len).map(move |b| (a, b))) {
                for (byte_a, byte_b) in [(b'"', b'\\'), (0, 0x1f), (b'\\', b'"'), (0x1f, 0)] {
                    let mut bytes = clean.clone();
                    bytes[second] = byte_b;
                    bytes[first] = byte_a;
                    assert!(!short_and_plain(&bytes), "{bytes:?}");
                    for i in 0..=len {
                        assert_eq!(
                            next_escape(&bytes, i),
                            naive(&bytes, i),
                            "{bytes:?} from {i}"
                        );
                    }
                }
            }
        }
    }

    #[derive(Serialize)]
    enum Shapes {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        Struct { a: Option<f64>, b: () },
    }

    #[derive(Serialize)]
    struct Everything<'a> {
        shapes: Vec<Shapes>,
        bytes: &'a [u8],
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        tuple: (bool, char, u128, i128, f32),
        unit_struct: Unit,
        floats: [f64; 3],
        raw: &'a RawValue,
        string_keys: BTreeMap<&'a str, u8>,
        number_keys: BTreeMap<u32, bool>,
        flattened: Flattened,
    }

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct Flattened {
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    #[test]
    fn every_shape_matches_serde_json() {
        let raw = RawValue::from_string(r#"{ "spaced" : [1, 2] }"#.to_owned()).unwrap();
        let everything = Everything {
            shapes: vec![
                Shapes::Unit,
                Shapes::Newtype(7),
                Shapes::Tuple(-3, "t\n".into()),
                Shapes::Struct { a: None, b: () },
                Shapes::Struct {
                    a: Some(f64::NAN),
                    b: (),
                },
            ],
            bytes: b"\x00\xff",
            skipped: None,
            tuple: (true, '"', u128::MAX, i128::MIN, 1.5),
            unit_struct: Unit,
            floats: [0.1, -0.0, 1e300],
            raw: &raw,
            string_keys: [("k\"ey", 1), ("", 2)].into(),
            number_keys: [(1, true), (20, false)].into(),
            flattened: Flattened {
                rest: [("x".to_owned(), Value::from(1))].into(),
            },
        };
        same(&everything);
        // Without the raw member and the number keys, nothing is left to serde_json.
        let mut out = Vec::new();
        assert!(
            everything
                .shapes
                .serialize(Writer { out: &mut out })
                .is_ok()
        );
    }

    #[test]
    fn errors_leave_the_buffer_as_it_was() {
        let map: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        let mut out = b"keep".to_vec();
        assert!(write(&mut out, &map).is_err());
        assert_eq!(out, b"keep");
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_matches_serde_json(value in value()) {
            prop_assert_eq!(ours(&value), serde_json::to_vec(&value).unwrap());
        }
    }
}
