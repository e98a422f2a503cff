//! `Patch`, the field where absent and `null` mean different things (absent keeps, `null`
//! clears, a value replaces).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field where absent and `null` mean different things: absent leaves the receiver's value
/// unchanged, `null` clears it, a value replaces it (the schema's "set to null to clear").
///
/// ```
/// use acp_types::{Patch, SessionInfoUpdate};
///
/// let update: SessionInfoUpdate = serde_json::from_str(r#"{"title": null}"#).unwrap();
/// assert_eq!(update.title, Patch::Clear);
/// assert_eq!(update.updated_at, Patch::Unchanged);
/// assert_eq!(serde_json::to_string(&update).unwrap(), r#"{"title":null}"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Patch<T> {
    /// The field was absent: keep the current value.
    #[default]
    Unchanged,
    /// The field was `null`: remove the current value.
    Clear,
    /// The field holds a new value.
    Set(T),
}

impl<T> Patch<T> {
    /// Whether the field is absent (used to omit it when encoding).
    pub fn is_unchanged(&self) -> bool {
        matches!(self, Patch::Unchanged)
    }

    /// Applies the patch to `current`.
    ///
    /// ```
    /// use acp_types::Patch;
    /// let mut title = Some("old".to_owned());
    /// Patch::Set("new".to_owned()).apply_to(&mut title);
    /// assert_eq!(title.as_deref(), Some("new"));
    /// Patch::Clear.apply_to(&mut title);
    /// assert_eq!(title, None);
    /// ```
    pub fn apply_to(self, current: &mut Option<T>) {
        match self {
            Patch::Unchanged => {}
            Patch::Clear => *current = None,
            Patch::Set(value) => *current = Some(value),
        }
    }

    /// The new value, if the patch sets one.
    pub fn as_set(&self) -> Option<&T> {
        match self {
            Patch::Set(value) => Some(value),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// `Some` sets, `None` clears.
    fn from(value: Option<T>) -> Self {
        value.map_or(Patch::Clear, Patch::Set)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // Only reached when the containing struct does not skip unchanged fields.
            Patch::Unchanged | Patch::Clear => serializer.serialize_none(),
            Patch::Set(value) => serializer.serialize_some(value),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(deserializer).map(Patch::from)
    }
}
