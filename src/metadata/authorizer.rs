//! Kafka's StandardAuthorizer (KIP-801) over the ACL bindings of a metadata image: whether a
//! principal may perform an operation on a resource.
//!
//! Contract ([`Authorizer::authorize_topic`]):
//! - A request with no principal is let through: the model's brokers, controllers, workload
//!   clients and admin client stand for Kafka's super users (inter-broker traffic, and clients
//!   whose credentials the scenarios do not spell out). Only a KIP-1279 mirror's connections to
//!   its source carry a principal (`crate::mirror::properties::mirror_principal`).
//! - A binding matches when its resource is the one asked (`type:name`) or that type's
//!   wildcard (`type:*`), its principal is the one asked or `User:*`, and its operation is the
//!   one asked or `All`.
//! - A matching `Deny` refuses, whatever allows (Kafka's deny-overrides rule).
//! - A matching `Allow` allows; an `Allow` of `Read`, `Write`, `Delete` or `Alter` also allows
//!   `Describe`, as in Kafka. A deny of those does not deny `Describe`.
//! - With no binding of any principal on the resource (its name or its wildcard),
//!   `allow.everyone.if.no.acl.found` decides (Kafka's default: refuse).
//!
//! Not modelled: prefixed resource patterns, hosts (every binding is for any host), cluster
//! or group resources and the other operations (the mirror's requests that are authorized all
//! read topics: `Read` and `Describe`).

use std::collections::BTreeSet;

use super::AclBinding;

/// A cluster's authorizer settings (`authorizer.class.name` set to the StandardAuthorizer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthorizerConfig {
    /// `allow.everyone.if.no.acl.found`: whether a resource no binding names is open to all.
    pub allow_everyone_if_no_acl_found: bool,
}

/// The operations the model authorizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclOperation {
    /// Fetch a topic's records.
    Read,
    /// Learn a topic's metadata (and, here, a partition's last mirrored epoch).
    Describe,
}

impl AclOperation {
    /// The operation's name in a binding.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "Read",
            Self::Describe => "Describe",
        }
    }

    /// Whether an `Allow` binding of `operation` allows this one.
    fn allowed_by(self, operation: &str) -> bool {
        operation == self.name()
            || operation == "All"
            || (self == Self::Describe
                && matches!(operation, "Read" | "Write" | "Delete" | "Alter"))
    }

    /// Whether a `Deny` binding of `operation` denies this one.
    fn denied_by(self, operation: &str) -> bool {
        operation == self.name() || operation == "All"
    }
}

/// The authorizer of one broker: its settings over its image's bindings.
#[derive(Debug, Clone, Copy)]
pub struct Authorizer<'a> {
    /// `None`: no authorizer configured, every request is let through.
    pub config: Option<AuthorizerConfig>,
    /// The image's ACL bindings.
    pub acls: &'a BTreeSet<AclBinding>,
}

impl Authorizer<'_> {
    /// Whether `principal` may perform `operation` on the topic `topic` (see the module doc).
    pub fn authorize_topic(
        &self,
        principal: Option<&str>,
        operation: AclOperation,
        topic: &str,
    ) -> bool {
        let (Some(config), Some(principal)) = (self.config, principal) else {
            return true;
        };
        let resource = format!("topic:{topic}");
        let on_resource =
            |binding: &&AclBinding| binding.resource == resource || binding.resource == "topic:*";
        let mut bindings = self.acls.iter().filter(on_resource).peekable();
        if bindings.peek().is_none() {
            return config.allow_everyone_if_no_acl_found;
        }
        let mut allowed = false;
        for binding in bindings {
            if binding.principal != principal && binding.principal != "User:*" {
                continue;
            }
            match binding.permission.as_str() {
                "Deny" if operation.denied_by(&binding.operation) => return false,
                "Allow" if operation.allowed_by(&binding.operation) => allowed = true,
                _ => {}
            }
        }
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(resource: &str, principal: &str, operation: &str, permission: &str) -> AclBinding {
        AclBinding {
            resource: resource.to_owned(),
            principal: principal.to_owned(),
            operation: operation.to_owned(),
            permission: permission.to_owned(),
        }
    }

    fn may(acls: &[AclBinding], open: bool, principal: Option<&str>, op: AclOperation) -> bool {
        let acls: BTreeSet<AclBinding> = acls.iter().cloned().collect();
        let authorizer = Authorizer {
            config: Some(AuthorizerConfig {
                allow_everyone_if_no_acl_found: open,
            }),
            acls: &acls,
        };
        authorizer.authorize_topic(principal, op, "orders")
    }

    const M1: Option<&str> = Some("User:m1");

    #[test]
    fn no_authorizer_or_no_principal_lets_everything_through() {
        let deny = [binding("topic:orders", "User:*", "All", "Deny")];
        let acls: BTreeSet<AclBinding> = deny.iter().cloned().collect();
        let none = Authorizer {
            config: None,
            acls: &acls,
        };
        assert!(none.authorize_topic(M1, AclOperation::Read, "orders"));
        assert!(may(&deny, false, None, AclOperation::Read));
        assert!(!may(&deny, false, M1, AclOperation::Read));
    }

    #[test]
    fn a_resource_no_binding_names_follows_allow_everyone_if_no_acl_found() {
        let elsewhere = [binding("topic:payments", "User:m1", "Read", "Allow")];
        assert!(!may(&elsewhere, false, M1, AclOperation::Read));
        assert!(may(&elsewhere, true, M1, AclOperation::Read));
        // Another principal's binding on the resource closes it to the rest.
        let other = [binding("topic:orders", "User:m2", "Read", "Allow")];
        assert!(!may(&other, true, M1, AclOperation::Read));
        assert!(may(&other, true, Some("User:m2"), AclOperation::Read));
    }

    #[test]
    fn deny_overrides_allow_and_read_implies_describe_but_not_its_denial() {
        let allow_read = binding("topic:orders", "User:m1", "Read", "Allow");
        assert!(may(
            std::slice::from_ref(&allow_read),
            false,
            M1,
            AclOperation::Read
        ));
        assert!(may(
            std::slice::from_ref(&allow_read),
            false,
            M1,
            AclOperation::Describe
        ));
        let deny_read = binding("topic:orders", "User:m1", "Read", "Deny");
        let both = [allow_read.clone(), deny_read.clone()];
        assert!(!may(&both, false, M1, AclOperation::Read));
        assert!(may(&both, false, M1, AclOperation::Describe));
        // Wildcards: any principal, any topic, all operations.
        let wildcard_deny = binding("topic:*", "User:*", "All", "Deny");
        assert!(!may(
            &[allow_read.clone(), wildcard_deny],
            true,
            M1,
            AclOperation::Describe
        ));
        let wildcard_allow = binding("topic:*", "User:*", "Read", "Allow");
        assert!(may(&[wildcard_allow], false, M1, AclOperation::Read));
        // A Describe allow does not allow Read.
        let describe = binding("topic:orders", "User:m1", "Describe", "Allow");
        assert!(!may(
            std::slice::from_ref(&describe),
            false,
            M1,
            AclOperation::Read
        ));
        assert!(may(&[describe], false, M1, AclOperation::Describe));
    }
}
