#pragma once
// How a rank ends a failing job, wherever the failure is seen (a throwing rank, a collective's
// timeout or disagreement, a peer's announcement, the heartbeat).
namespace strider::dist::detail {

// From now on this process is ending the job: a peer going silent is expected, not news.
void mark_job_ending();
bool job_ending();

// MPI_Abort, which asks the launcher to end every rank. Should the launcher fail to end this
// process too (mpirun waits for a frozen host's daemon), a watchdog ends it after a grace
// period, so no rank outlives the job it belongs to.
[[noreturn]] void abort_job();

}  // namespace strider::dist::detail
