//! Decoding rules the generated types use.
//!
//! - Tagged unions ([`tagged`]): the tag is read first when it comes first (it does in nearly
//!   all real traffic), and the rest of the object streams into the variant's type without any
//!   intermediate tree; members before the tag are buffered. An unknown tag keeps the whole
//!   object; a known tag with a bad payload is an error.
//! - Lenient fields (`x-deserialize-default-on-error`, `x-deserialize-skip-invalid-items`): a
//!   value that does not decode becomes the default, or is left out of its array, and what was
//!   dropped is reported to [`collect_dropped`].

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess,
    Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::Value;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// A value that a lenient field could not decode and replaced by its default (or left out of
/// its array), as the schema allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Dropped {
    /// The Rust type that was expected.
    pub expected: &'static str,
    /// Why it did not decode.
    pub error: String,
    /// The JSON that was dropped.
    pub value: Value,
}

thread_local! {
    static DROPPED: RefCell<Option<Vec<Dropped>>> = const { RefCell::new(None) };
}

/// Runs `decode` and returns, with its result, every value that lenient fields dropped
/// meanwhile on this thread.
///
/// ```
/// use acp_types::{ToolCallUpdate, de::collect_dropped};
///
/// let json = r#"{"toolCallId": "t1", "locations": [{"path": "/a"}, {"path": 42}]}"#;
/// let (update, dropped) = collect_dropped(|| serde_json::from_str::<ToolCallUpdate>(json));
/// assert_eq!(update.unwrap().locations.unwrap().len(), 1);
/// assert_eq!(dropped.len(), 1);
/// assert_eq!(dropped[0].value, serde_json::json!({"path": 42}));
/// ```
pub fn collect_dropped<R>(decode: impl FnOnce() -> R) -> (R, Vec<Dropped>) {
    let outer = DROPPED.with(|cell| cell.borrow_mut().replace(Vec::new()));
    let result = decode();
    let dropped = DROPPED.with(|cell| std::mem::replace(&mut *cell.borrow_mut(), outer));
    (result, dropped.unwrap_or_default())
}

fn report<T>(error: impl fmt::Display, value: Value) {
    DROPPED.with(|cell| {
        if let Some(list) = cell.borrow_mut().as_mut() {
            list.push(Dropped {
                expected: std::any::type_name::<T>(),
                error: error.to_string(),
                value,
            });
        }
    });
}

fn decode_or_report<T: DeserializeOwned>(value: Value) -> Option<T> {
    match T::deserialize(&value) {
        Ok(decoded) => Some(decoded),
        Err(error) => {
            report::<T>(error, value);
            None
        }
    }
}

/// `x-deserialize-default-on-error`: a value that does not decode becomes `T::default()`.
pub fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
    deserializer: D,
) -> Result<T, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(decode_or_report(value).unwrap_or_default())
}

/// `x-deserialize-skip-invalid-items` on a plain array: items that do not decode are left out,
/// and a value that is not an array becomes the empty array.
pub fn lenient_items<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Ok(lenient_items_of(Value::deserialize(deserializer)?).unwrap_or_default())
}

/// `x-deserialize-skip-invalid-items` on a nullable array.
pub fn lenient_items_opt<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<Option<Vec<T>>, D::Error> {
    Ok(lenient_items_of(Value::deserialize(deserializer)?))
}

/// `x-deserialize-skip-invalid-items` on a [`Patch`](crate::Patch) array: `null` clears.
pub fn lenient_items_patch<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<crate::Patch<Vec<T>>, D::Error> {
    Ok(crate::Patch::from(lenient_items_of(Value::deserialize(
        deserializer,
    )?)))
}

fn lenient_items_of<T: DeserializeOwned>(value: Value) -> Option<Vec<T>> {
    match value {
        Value::Null => None,
        Value::Array(items) => Some(items.into_iter().filter_map(decode_or_report).collect()),
        other => {
            report::<Vec<T>>("expected an array", other);
            None
        }
    }
}

/// A struct arm of an untagged union that has a catch-all: only a JSON object is this arm
/// (serde would also read a struct from an array of its fields, taking a value meant for the
/// catch-all).
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<T, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    if !value.is_object() {
        return Err(serde::de::Error::custom("expected a JSON object"));
    }
    T::deserialize(value).map_err(serde::de::Error::custom)
}

/// `x-deserialize-default-on-null`: `null` decodes as `T::default()`.
pub fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    deserializer: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Decodes a string enum through `from_str`, borrowing the string when the input allows.
pub fn str_enum<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    from_str: fn(&str) -> T,
) -> Result<T, D::Error> {
    struct StrVisitor<T>(fn(&str) -> T);
    impl<T> Visitor<'_> for StrVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.0)(v))
        }
    }
    deserializer.deserialize_str(StrVisitor(from_str))
}

/// A union whose variants are told apart by a string member (the tag).
pub trait TaggedUnion<'de>: Sized {
    /// The type's name, for error messages.
    const NAME: &'static str;
    /// The tag's member name.
    const TAG: &'static str;
    /// Builds the value from the tag (if present) and the object's other members.
    fn from_parts<R: RestOfObject<'de>>(tag: Option<&str>, rest: R) -> Result<Self, R::Error>;
}

/// The members of a tagged object other than its tag.
pub trait RestOfObject<'de> {
    /// The deserializer's error type.
    type Error: de::Error;
    /// Decodes the members as `T`.
    fn parse<T: Deserialize<'de>>(self) -> Result<T, Self::Error>;
    /// Ignores the members (variants without payload).
    fn skip(self) -> Result<(), Self::Error>;
    /// Keeps the whole object, tag included, for a tag this schema does not know.
    fn unknown(self, tag: &str) -> Result<Value, Self::Error>;
    /// The error for an object without the tag (when the union has no untagged arm).
    fn missing_tag(self) -> Self::Error;
}

/// Deserializes a [`TaggedUnion`].
pub fn tagged<'de, D: Deserializer<'de>, T: TaggedUnion<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: TaggedUnion<'de>> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} object", T::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut buffered = Vec::new();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if key.as_str() == T::TAG {
                // A `null` tag counts as absent (the schema's "none" arms say so).
                let tag = map.next_value::<Option<Str<'de>>>()?;
                let rest = Rest::<A, T>::new(buffered, map);
                return T::from_parts(tag.as_ref().map(Str::as_str), rest);
            }
            let value: Value = map.next_value()?;
            buffered.push((key.into_owned(), value));
        }
        let mut rest = Rest::<A, T>::new(buffered, map);
        rest.map_done = true;
        T::from_parts(None, rest)
    }
}

/// A string that borrows from the input when it can.
enum Str<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Str<'_> {
    fn as_str(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Owned(s) => s,
        }
    }
    fn into_owned(self) -> String {
        match self {
            Str::Borrowed(s) => s.to_owned(),
            Str::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str::Owned(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str::Owned(v))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

/// Members buffered before the tag, then the members still unread.
struct Rest<A, T> {
    buffered: std::vec::IntoIter<(String, Value)>,
    pending_value: Option<Value>,
    map: A,
    map_done: bool,
    union: PhantomData<T>,
}

impl<A, T> Rest<A, T> {
    fn new(buffered: Vec<(String, Value)>, map: A) -> Self {
        Rest {
            buffered: buffered.into_iter(),
            pending_value: None,
            map,
            map_done: false,
            union: PhantomData,
        }
    }
}

impl<'de, A: MapAccess<'de>, T: TaggedUnion<'de>> RestOfObject<'de> for Rest<A, T> {
    type Error = A::Error;

    fn parse<P: Deserialize<'de>>(self) -> Result<P, A::Error> {
        P::deserialize(self)
    }

    fn skip(mut self) -> Result<(), A::Error> {
        while self.next_key::<IgnoredAny>()?.is_some() {
            self.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn unknown(self, tag: &str) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::deserialize(self)?;
        object.insert(T::TAG.to_owned(), Value::String(tag.to_owned()));
        Ok(Value::Object(object))
    }

    fn missing_tag(self) -> A::Error {
        de::Error::custom(format_args!("missing field `{}` in {}", T::TAG, T::NAME))
    }
}

impl<'de, A: MapAccess<'de>, T> MapAccess<'de> for Rest<A, T> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.buffered.next() {
            self.pending_value = Some(value);
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        if self.map_done {
            return Ok(None);
        }
        let key = self.map.next_key_seed(seed)?;
        self.map_done = key.is_none();
        Ok(key)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.pending_value.take() {
            Some(value) => seed.deserialize(value).map_err(de::Error::custom),
            None => self.map.next_value_seed(seed),
        }
    }
}

impl<'de, A: MapAccess<'de>, T> Deserializer<'de> for Rest<A, T> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
