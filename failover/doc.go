// Package failover measures what a primary failover does to a Redis lock
// (fault 5 of issue #5): how often a second client is granted a lock that
// the first still holds, for the single-instance locks behind Redis
// Sentinel (rung 6, lua, and the libraries that write the same key the
// same way: redsync over one pool, redislock, redislock-refresh), and for
// redlock over independent masters.
//
// The lesson [002]: Redis replication is asynchronous. The primary answers
// OK to SET NX before the replica has the write; if the primary dies in
// that window, the sentinels promote a replica that never heard of the
// lock, and the next client to ask is granted it while the first still
// holds it by every measure it has (its token, its lease). A replica, a
// failover and a client library that follows it add availability, not
// safety; nor does a library's care: its lock is one key on whichever
// primary its client reaches, and redislock's Refresh only extends a key
// that is still there. Redlock does not replicate: it asks N independent
// masters and holds the lock only with a majority of them, so a master
// that dies and comes back empty takes only one vote with it, and a
// second client can reach at most that one plus the masters the first
// never had: short of a majority. (It needs a majority of masters to
// keep the key; several of them restarting empty at once, without
// persistence, would still lose it; and a holder paused past its validity
// is another story: see package lock.)
//
// Every trial is built to hit the window, not to wait for luck. For a
// single-instance lock (SingleInstance), each trial starts a fresh
// sentinel.Group (a primary, one replica that replicates through a
// FaultProxy, three real sentinels), cuts the replication link, lets
// client A obtain the lock (a 30s lease), reads A's token back from the
// primary, SIGKILLs the primary, checks that the replica never got the
// key, waits for the sentinels to promote it, and lets client B, a
// separate go-redis FailoverClient, try the same key with a 1s wait. For
// redlock (Redlock), each trial starts five fresh redis-servers, A obtains
// the lock, one master that holds A's token is SIGKILLed at once and
// restarted empty on the same port, and B tries. A double grant is B
// granted while A's lease is still valid by A's own account; every
// outcome is read back (B's Obtain and the keys in Redis), never assumed.
//
// Both need a real redis-server (the sentinels are real sentinel
// processes). The tests run 3 trials of each lock, the libraries
// included; go test ./failover -trials 20 runs the 20.
package failover
