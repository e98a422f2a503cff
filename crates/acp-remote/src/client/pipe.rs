//! The runtime's end of a connection that a task of ours drives (a durable WebSocket
//! connection, the fallback to `session/resume`): two bounded queues of lines, the
//! runtime's input and its output, and why the input ended.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::lines::LineWriter;
use crate::queue::{ByteQueue, Failure, Inbound, Outbound, QueueReader, QueueSink};
use crate::share::Share;
use acp_jsonrpc::Latch;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The queues between the runtime and the driver.
#[derive(Debug)]
pub(crate) struct Pipe {
    inbound: ByteQueue,
    outbound: ByteQueue,
    failure: Mutex<Option<Failure>>,
    ended: Latch,
}

impl Pipe {
    /// A pipe whose queues hold at least one message of `max_message_size` (1 MiB at least).
    pub(crate) fn new(max_message_size: usize) -> Arc<Pipe> {
        let budget = max_message_size.max(1 << 20);
        Arc::new(Pipe {
            inbound: ByteQueue::new(Share::alone(budget)),
            outbound: ByteQueue::new(Share::alone(budget)),
            failure: Mutex::default(),
            ended: Latch::default(),
        })
    }

    /// The runtime's reader and writer.
    pub(crate) fn ends(self: &Arc<Self>) -> (PipeReader, PipeWriter) {
        let writer = LineWriter::new(QueueSink::new(self.clone()));
        (QueueReader::new(self.clone()), writer)
    }

    /// The runtime's input: the driver pushes lines.
    pub(crate) fn inbound(&self) -> &ByteQueue {
        &self.inbound
    }

    /// The runtime's output: the driver pops lines (`None`: the runtime closed its writer).
    pub(crate) fn outbound(&self) -> &ByteQueue {
        &self.outbound
    }

    /// Ends the connection: the runtime reads the end of input.
    pub(crate) fn end(&self) {
        self.ended.set();
        self.inbound.close();
        self.outbound.abort();
    }

    /// Ends the connection with `failure`, which the runtime's reader fails with.
    pub(crate) fn fail(&self, failure: Failure) {
        lock(&self.failure).get_or_insert(failure);
        self.end();
    }
}

impl Inbound for Pipe {
    fn inbound(&self) -> &ByteQueue {
        &self.inbound
    }

    fn failure(&self) -> Option<String> {
        lock(&self.failure).as_ref().map(|f| f.reason().to_owned())
    }

    fn failure_error(&self) -> Option<io::Error> {
        lock(&self.failure).as_ref().map(Failure::to_error)
    }
}

/// The runtime's input on a driven connection.
pub(crate) type PipeReader = QueueReader<Pipe>;
/// The runtime's output on a driven connection.
/// Closing it closes the driver's queue: the driver sends what is queued, then closes the
/// WebSocket.
pub(crate) type PipeWriter = LineWriter<QueueSink<Pipe>>;

impl Outbound for Pipe {
    fn outbound(&self) -> &ByteQueue {
        &self.outbound
    }
}
