//! A file's bytes sent from the page cache to a plain TCP socket with `sendfile(2)`, inside an
//! HTTP/1 response that hyper writes: no copy through user space, no reading thread.
//!
//! hyper writes a response's head and its body's chunks with vectored writes, the chunks as
//! they came from the body (its queued write strategy, which this layer turns on). A
//! [`FileBody`] yields chunks that point into [`HOLE`], memory that is never read, and notes in
//! the connection's [`Sink`], in order, which bytes of which file they stand for. The socket
//! under hyper ([`SendfileIo`]) writes ordinary bytes as they are; where a write reaches
//! bytes in the hole, it sends that many bytes of the noted file instead. An HTTP/1 connection
//! writes one response after the other, each body in the order its chunks were yielded, so the
//! hole bytes reach the socket in the order their files were noted. Bytes of the hole with no
//! file noted for them fail the connection; they are never sent as they are.
//!
//! Only a plain-TCP connection has a sink (TLS has to encrypt the bytes in user space anyway),
//! and only HTTP/1 answers may use it: HTTP/2 interleaves the DATA of its streams.
//!
//! The file's pages are normally in the page cache (written at the version's build); one that
//! is not is read by the kernel inside the call, on the connection's worker thread, as a
//! `sendfile` server does.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The largest chunk a [`FileBody`] yields. Consecutive chunks of one file are sent by one
/// `sendfile` call, so this bounds only how much hyper takes at once.
const CHUNK: usize = 64 * 1024;

/// The memory every [`FileBody`] chunk points into: its address is what marks a chunk as file
/// bytes; its contents are never read or sent.
static HOLE: [u8; CHUNK] = [0; CHUNK];

/// Whether `b` points into [`HOLE`].
pub(super) fn is_hole(b: &[u8]) -> bool {
    let (start, at) = (HOLE.as_ptr() as usize, b.as_ptr() as usize);
    !b.is_empty() && at >= start && at < start + CHUNK
}

/// Bytes of a file to send where hole bytes are written.
struct Region {
    file: Arc<File>,
    offset: u64,
    len: u64,
}

/// A connection's files to send, in the order their bytes are written. Handed to every
/// request of a plain-TCP connection as a request extension.
#[derive(Clone, Default)]
pub struct Sink(Arc<Mutex<VecDeque<Region>>>);

impl Sink {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Region>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A body of `len` bytes of `file` from `offset`, sent through this connection's socket.
    /// The caller's response must say `Content-Length: len` and go out over HTTP/1.
    pub fn body(&self, file: Arc<File>, offset: u64, len: u64) -> FileBody {
        FileBody {
            sink: self.clone(),
            file,
            offset,
            left: len,
        }
    }

    /// Notes the next `len` hole bytes as `file`'s from `offset`, joined to the last region
    /// when they follow it.
    fn note(&self, file: &Arc<File>, offset: u64, len: u64) {
        let mut q = self.queue();
        match q.back_mut() {
            Some(r) if Arc::ptr_eq(&r.file, file) && r.offset + r.len == offset => r.len += len,
            _ => q.push_back(Region {
                file: file.clone(),
                offset,
                len,
            }),
        }
    }
}

/// A response body whose bytes are a file's, sent by `sendfile` ([`Sink::body`]).
pub struct FileBody {
    sink: Sink,
    file: Arc<File>,
    offset: u64,
    left: u64,
}

impl http_body::Body for FileBody {
    type Data = bytes::Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, io::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(CHUNK as u64);
        self.sink.note(&self.file, self.offset, n);
        self.offset += n;
        self.left -= n;
        let chunk = bytes::Bytes::from_static(&HOLE[..n as usize]);
        Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

/// A plain TCP connection as hyper writes to it: hole bytes become `sendfile` calls.
pub struct SendfileIo {
    tcp: TcpStream,
    sink: Sink,
}

impl SendfileIo {
    pub fn new(tcp: TcpStream, sink: Sink) -> SendfileIo {
        SendfileIo { tcp, sink }
    }

    /// Sends up to `want` bytes of the first noted region.
    fn poll_send_region(&self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<usize>> {
        let mut q = self.sink.queue();
        let Some(r) = q.front_mut() else {
            return Poll::Ready(Err(io::Error::other(
                "file bytes in a response with no file to send them from",
            )));
        };
        let n = (r.len.min(want as u64) as usize).min(MAX_SENDFILE);
        let sent = loop {
            ready!(self.tcp.poll_write_ready(cx))?;
            match self.tcp.try_io(Interest::WRITABLE, || {
                sendfile(&self.tcp, &r.file, r.offset, n)
            }) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                Ok(sent) => break sent,
                // The socket was full after all; its readiness is cleared, so wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        };
        r.offset += sent as u64;
        r.len -= sent as u64;
        if r.len == 0 {
            q.pop_front();
        }
        Poll::Ready(Ok(sent))
    }
}

/// Linux sends at most this much in one `sendfile` call.
const MAX_SENDFILE: usize = 0x7fff_f000;

/// `sendfile(2)`: up to `len` bytes of `file` from `offset` to the socket; the count sent.
/// The socket is non-blocking, so a full one fails with `WouldBlock`.
fn sendfile(tcp: &TcpStream, file: &File, offset: u64, len: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    // SAFETY: both descriptors are borrowed from objects alive for the call; `off` is a local
    // the kernel reads and updates; nothing else is passed by pointer.
    let n = unsafe { libc::sendfile(tcp.as_raw_fd(), file.as_raw_fd(), &mut off, len) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

impl AsyncRead for SendfileIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendfileIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// Writes the ordinary bytes up to the first hole bytes, or sends the file bytes the hole
    /// bytes at the start stand for (as many as follow one another); a partial write either
    /// way, which the writer continues.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let bufs = match bufs.iter().position(|b| !b.is_empty()) {
            Some(i) => &bufs[i..],
            None => return Poll::Ready(Ok(0)),
        };
        if is_hole(&bufs[0]) {
            let want = bufs
                .iter()
                .take_while(|b| is_hole(b))
                .map(|b| b.len())
                .sum();
            return self.poll_send_region(cx, want);
        }
        let plain = bufs.iter().position(|b| is_hole(b)).unwrap_or(bufs.len());
        Pin::new(&mut self.tcp).poll_write_vectored(cx, &bufs[..plain])
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
