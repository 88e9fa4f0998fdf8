import NIOCore

/// Runs a Swift task's jobs on one NIO event loop instead of Swift's
/// cooperative pool.
///
/// postgres-nio offers `COPY … FROM STDIN` only as an `async` function. The
/// blocking API must not start a task on the cooperative pool and wait for it:
/// on a two-core machine that pool has two threads, and when both are
/// blocked waiting (two tests, two server requests) the task never runs. A
/// task whose executor preference is this executor runs every nonisolated
/// part of it, and resumes after each suspension, on the connection's own
/// event loop, which never blocks, so a thread waiting for it (with
/// `EventLoopFuture.wait()`) always sees it finish.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// Runs `operation` as a task on the event loop and blocks the calling
    /// thread until it finishes, returning what it returned or throwing what
    /// it threw. The calling thread must not be the event loop's.
    func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let promise = eventLoop.makePromise(of: T.self)
        Task(executorPreference: self) {
            do {
                promise.succeed(try await operation())
            } catch {
                promise.fail(error)
            }
        }
        return try promise.futureResult.wait()
    }
}
