//! The answer's text of one model call, handed to an observer as it
//! streams in: every piece passes one [`StreamingRedactor`] for the whole
//! call, so a secret the model splits across two pieces is caught; what it
//! holds back is released when the call ends.

use std::sync::{Arc, Mutex, PoisonError};

use super::record::{AgentEvent, AgentObserver};
use crate::engine::secret::{Redactor, StreamingRedactor};
use crate::runtime::model::TextDeltas;

/// One model call's stream of text to one observer.
pub struct TextStream {
    observer: Arc<dyn AgentObserver>,
    redactor: Mutex<StreamingRedactor>,
    agent: String,
    step: u32,
    depth: usize,
}

impl TextStream {
    /// A stream of step `step` of `agent`'s run (at `depth`) to `observer`, redacted
    /// with what `redactor` knows.
    pub fn new(
        observer: Arc<dyn AgentObserver>,
        redactor: Redactor,
        agent: String,
        step: u32,
        depth: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            observer,
            redactor: Mutex::new(StreamingRedactor::new(redactor)),
            agent,
            step,
            depth,
        })
    }

    /// Where the model sends its pieces.
    pub fn deltas(self: &Arc<Self>) -> TextDeltas {
        let this = Arc::clone(self);
        TextDeltas(Arc::new(move |piece: &str| {
            let released = this.lock().push(piece);
            this.emit(released);
        }))
    }

    /// The call ended: release what was held.
    pub fn finish(&self) {
        let rest = self.lock().finish();
        self.emit(rest);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StreamingRedactor> {
        self.redactor.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, text: String) {
        if text.is_empty() {
            return;
        }
        self.observer.on_event(&AgentEvent::TextDelta {
            agent: self.agent.clone(),
            step: self.step,
            depth: self.depth,
            text,
        });
    }
}
