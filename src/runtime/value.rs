//! Capability values: what a provider hands to its consumers.
//!
//! Values are opaque to chassis (never compared, hashed or serialized); a
//! consumer reads them back with the type it expects.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// An opaque, shareable capability value.
#[derive(Clone)]
pub struct CapabilityValue(Arc<dyn Any + Send + Sync>);

impl CapabilityValue {
    /// Wrap any shareable value.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// A value with no content (what a declared plugin provides).
    pub fn unit() -> Self {
        Self::new(())
    }

    /// A `policy` value: the engine the harness asks for the scopes this
    /// provider governs (read back as `Arc<dyn PolicyEngine>`).
    pub fn policy(engine: impl crate::engine::policy::PolicyEngine + 'static) -> Self {
        Self::new(Arc::new(engine) as Arc<dyn crate::engine::policy::PolicyEngine>)
    }

    /// A `secrets` value: where tools of the scopes this provider governs
    /// resolve secrets (read back as `Arc<dyn SecretProvider>`).
    pub fn secrets(provider: impl crate::engine::secret::SecretProvider + 'static) -> Self {
        Self::new(Arc::new(provider) as Arc<dyn crate::engine::secret::SecretProvider>)
    }

    /// The value as `T`, if it is one.
    pub fn downcast<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        Arc::clone(&self.0).downcast::<T>().ok()
    }
}

impl fmt::Debug for CapabilityValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CapabilityValue(..)")
    }
}
