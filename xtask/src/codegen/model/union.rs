//! Union lowering (`oneOf`/`anyOf`): tagged, untagged and constant-enum unions, and the
//! payload types of their arms.

use super::*;

impl Lowerer<'_> {
    pub(super) fn lower_union(&mut self, name: &str, arms: &Json, path: &str) -> Result<ItemKind> {
        let arms = arms
            .as_array()
            .ok_or(format!("{path}: union is not an array"))?;
        let arm_type = |arm: &Json| arm.get("type").and_then(Json::as_str).map(str::to_owned);

        // String constants, optionally with the schema's own catch-all string arm.
        if arms
            .iter()
            .all(|a| arm_type(a).as_deref() == Some("string") && a.get("properties").is_none())
        {
            let mut variants = Vec::new();
            let mut open = None;
            for arm in arms {
                match arm.get("const") {
                    Some(Json::String(value)) => variants.push(ConstVariant {
                        value: value.clone(),
                        rust_name: pascal(value),
                        doc: description(arm),
                    }),
                    None if open.is_none() => {
                        let title = arm.get("title").and_then(Json::as_str).unwrap_or("other");
                        open = Some((pascal(title), description(arm)));
                    }
                    _ => {
                        return Err(format!(
                            "{path}: unsupported string union arm {}",
                            arm.to_compact()
                        ));
                    }
                }
            }
            if let Some((catch_all, _)) = &open
                && variants.iter().any(|v| &v.rust_name == catch_all)
            {
                open.as_mut().expect("checked").0 = "Unknown".to_owned();
            }
            let taken = |name: &str| variants.iter().any(|v| v.rust_name == name);
            match &mut open {
                Some((catch_all, _)) if taken(catch_all) => *catch_all = free_name(taken),
                None if taken("Unknown") => open = Some((free_name(taken), None)),
                _ => {}
            }
            return Ok(ItemKind::StringEnum(ConstEnum { variants, open }));
        }
        if arms
            .iter()
            .all(|a| arm_type(a).as_deref() == Some("integer"))
        {
            let mut variants = Vec::new();
            let mut open = None;
            for arm in arms {
                let title = arm.get("title").and_then(Json::as_str);
                match arm.get("const") {
                    Some(Json::Number(n)) => variants.push(ConstVariant {
                        value: n.as_i64().ok_or(format!("{path}: non-integer const"))?,
                        rust_name: pascal(
                            title.ok_or(format!("{path}: integer constant without title"))?,
                        ),
                        doc: description(arm),
                    }),
                    None if open.is_none() => {
                        open = Some((pascal(title.unwrap_or("other")), description(arm)))
                    }
                    _ => return Err(format!("{path}: unsupported integer union arm")),
                }
            }
            return Ok(ItemKind::IntEnum(ConstEnum { variants, open }));
        }

        // Objects discriminated by a constant property.
        let tags: BTreeSet<String> = arms
            .iter()
            .filter_map(|a| arm_tag(a).map(|(t, _)| t))
            .collect();
        if tags.len() > 1 {
            return Err(format!(
                "{path}: arms are tagged by different properties {tags:?}"
            ));
        }
        if let Some(tag) = tags.into_iter().next() {
            let mut variants = Vec::new();
            let mut default_arm = None;
            let mut catch_all_doc = None;
            for (i, arm) in arms.iter().enumerate() {
                let arm_path = format!("{path}/{i}");
                if arm.get("not").is_some() {
                    catch_all_doc = Some(description(arm).unwrap_or_default());
                    continue;
                }
                match arm_tag(arm) {
                    Some((_, value)) => {
                        let rust_name = pascal(&value);
                        let payload =
                            self.arm_payload(name, &rust_name, arm, Some(&tag), &arm_path)?;
                        variants.push(TaggedVariant {
                            value,
                            rust_name,
                            doc: description(arm),
                            payload,
                        });
                    }
                    None => {
                        if default_arm.is_some() {
                            return Err(format!("{arm_path}: more than one arm without a tag"));
                        }
                        let title = arm
                            .get("title")
                            .and_then(Json::as_str)
                            .ok_or(format!("{arm_path}: untagged arm without title"))?;
                        let rust_name = pascal(title);
                        let mut payload =
                            self.arm_payload(name, &rust_name, arm, Some(&tag), &arm_path)?;
                        if payload.is_none() {
                            // Encoded as an object without the tag: an empty struct says so.
                            let struct_name = format!("{name}{rust_name}");
                            self.claim_name(&struct_name, &arm_path)?;
                            self.model.items.push(Item {
                                name: struct_name.clone(),
                                doc: description(arm),
                                kind: ItemKind::Struct(Struct {
                                    fields: Vec::new(),
                                    flattened: None,
                                }),
                            });
                            payload = Some(struct_name);
                        }
                        default_arm = Some(TaggedVariant {
                            value: title.to_owned(),
                            rust_name,
                            doc: description(arm),
                            payload,
                        });
                    }
                }
            }
            let taken: Vec<&str> = variants
                .iter()
                .chain(&default_arm)
                .map(|v| v.rust_name.as_str())
                .collect();
            let catch_all_name = free_name(|n| taken.contains(&n));
            return Ok(ItemKind::Tagged(Tagged {
                tag,
                variants,
                default_arm,
                catch_all_doc,
                catch_all_name,
            }));
        }

        // Untagged: each arm is a reference or a plain type, tried in order.
        let mut variants = Vec::new();
        for (i, arm) in arms.iter().enumerate() {
            let arm_path = format!("{path}/{i}");
            let title = arm.get("title").and_then(Json::as_str);
            if arm_type(arm).as_deref() == Some("null") {
                variants.push(UntaggedVariant {
                    rust_name: pascal(title.unwrap_or("Null")),
                    doc: description(arm),
                    ty: None,
                });
                continue;
            }
            if arm.get("properties").is_some() {
                let title = title.ok_or(format!("{arm_path}: inline object arm needs a title"))?;
                let payload = self.arm_payload(name, &pascal(title), arm, None, &arm_path)?;
                let ty = payload.map(Ty::Ref);
                variants.push(UntaggedVariant {
                    rust_name: pascal(title),
                    doc: description(arm),
                    ty,
                });
                continue;
            }
            let (ty, nullable) = self.lower_ty(arm, &arm_path)?;
            if nullable {
                return Err(format!("{arm_path}: nullable arm in an untagged union"));
            }
            let rust_name = match (title, &ty) {
                (Some(t), _) => pascal(t),
                (None, Ty::Ref(r)) => r.clone(),
                _ => return Err(format!("{arm_path}: untagged arm needs a title")),
            };
            variants.push(UntaggedVariant {
                rust_name,
                doc: description(arm),
                ty: Some(ty),
            });
        }
        Ok(ItemKind::Untagged(variants))
    }

    /// The payload type of a union arm: its single `$ref`, a struct made of its own properties,
    /// or nothing.
    fn arm_payload(
        &mut self,
        union: &str,
        variant: &str,
        arm: &Json,
        tag: Option<&str>,
        path: &str,
    ) -> Result<Option<String>> {
        let refs: Vec<&str> = arm
            .get("allOf")
            .and_then(Json::as_array)
            .unwrap_or(&[])
            .iter()
            .map(|r| {
                r.get("$ref")
                    .and_then(Json::as_str)
                    .ok_or(format!("{path}/allOf: expected $ref"))
            })
            .chain(arm.get("$ref").and_then(Json::as_str).map(Ok))
            .collect::<Result<_>>()?;
        let inline: Vec<&(String, Json)> = arm
            .get("properties")
            .and_then(Json::as_object)
            .unwrap_or(&[])
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != tag)
            .collect();
        if arm.get("anyOf").is_some() || arm.get("oneOf").is_some() {
            return Err(format!(
                "{path}: nested union inside a union arm is not supported"
            ));
        }
        match (refs.as_slice(), inline.is_empty()) {
            ([], true) => Ok(None),
            ([target], true) => Ok(Some(self.ref_name(target, path)?)),
            ([], false) => {
                let struct_name = format!("{union}{variant}");
                self.claim_name(&struct_name, path)?;
                let mut synthetic = arm.clone();
                if let (Json::Object(members), Some(tag)) = (&mut synthetic, tag) {
                    for (key, value) in members.iter_mut() {
                        if key == "properties"
                            && let Json::Object(props) = value
                        {
                            props.retain(|(k, _)| k != tag);
                        }
                        if key == "required"
                            && let Json::Array(names) = value
                        {
                            names.retain(|n| n.as_str() != Some(tag));
                        }
                    }
                }
                let fields = self.lower_fields(&struct_name, &synthetic, path)?;
                self.model.items.push(Item {
                    name: struct_name.clone(),
                    doc: description(arm),
                    kind: ItemKind::Struct(Struct {
                        fields,
                        flattened: None,
                    }),
                });
                Ok(Some(struct_name))
            }
            _ => Err(format!(
                "{path}: an arm with both a $ref and its own properties is not supported"
            )),
        }
    }
}
