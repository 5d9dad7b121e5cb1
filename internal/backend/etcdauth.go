package backend

import (
	"context"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// etcdAuth is an etcd client's password login, in place of clientv3's
// own (Config.Username and Password), for one reason: etcd 3.4 checks
// the token that comes with an Authenticate request (3.5 stopped doing
// so), and clientv3 sends its current token with every request. When
// the server restarts, its simple tokens die with it; the client's next
// Authenticate then carries the dead token, is refused as "invalid auth
// token", and the client never logs in again: every lock on that etcd
// waits out its bound, for good.
//
// This one sends its token with every request but Authenticate, logs in
// again when the server calls the token invalid, and logs in before each new stream
// (a watch or lease keep-alive stream opened again after a restart
// would otherwise carry the dead token: clientv3 does the same, see
// etcd-io/etcd issue "auth token invalid after watch reconnects").
type etcdAuth struct {
	user, password string
	cli            *clientv3.Client // set once the client exists

	token atomic.Pointer[string] // the current one; nil before the first login
	gate  chan struct{}          // one login at a time, waited for within the caller's context
}

func newEtcdAuth(user, password string) *etcdAuth {
	return &etcdAuth{user: user, password: password, gate: make(chan struct{}, 1)}
}

// loginTimeout bounds a login: a stream's context has no deadline, and a
// login waits for the server to be back.
const loginTimeout = 5 * time.Second

// dialOptions are the client's: interceptors that put the token on each
// request but Authenticate, and renew it.
func (a *etcdAuth) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(a.unary),
		grpc.WithChainStreamInterceptor(a.stream),
	}
}

// authenticate is the one request that goes without the token.
const authenticate = "/etcdserverpb.Auth/Authenticate"

// GetRequestMetadata is grpc's credentials.PerRPCCredentials: the
// current token.
func (a *etcdAuth) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	t := a.current()
	if t == "" {
		return nil, nil
	}
	return map[string]string{rpctypes.TokenFieldNameGRPC: t}, nil
}

// RequireTransportSecurity is false: the lab's etcd listens on loopback
// without TLS, as clientv3's own token does.
func (a *etcdAuth) RequireTransportSecurity() bool { return false }

func (a *etcdAuth) current() string {
	if t := a.token.Load(); t != nil {
		return *t
	}
	return ""
}

// login logs in again unless another caller already replaced stale
// (the token the caller found wanting); "" logs in whatever the token.
func (a *etcdAuth) login(ctx context.Context, stale string) error {
	select {
	case a.gate <- struct{}{}:
		defer func() { <-a.gate }()
	case <-ctx.Done():
		return ctx.Err()
	}
	if stale != "" && a.current() != stale {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	resp, err := a.cli.Authenticate(ctx, a.user, a.password)
	if err != nil {
		return err
	}
	a.token.Store(&resp.Token)
	return nil
}

// unary logs in when there is no token yet, and once more when the
// server refuses the one sent.
func (a *etcdAuth) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method == authenticate {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	opts = append(opts, grpc.PerRPCCredentials(a))
	t := a.current()
	if t == "" {
		if err := a.login(ctx, ""); err != nil {
			return err
		}
		t = a.current()
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if !invalidToken(err) {
		return err
	}
	if lerr := a.login(ctx, t); lerr != nil {
		return err
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// stream logs in before every new stream: a stream keeps the token it
// opened with, and the server refuses its watches (as permission
// denied, not as a bad token) once that token has died.
func (a *etcdAuth) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if err := a.login(ctx, ""); err != nil {
		return nil, err
	}
	return streamer(ctx, desc, cc, method, append(opts, grpc.PerRPCCredentials(a))...)
}

func invalidToken(err error) bool {
	return err != nil && rpctypes.Error(err) == rpctypes.ErrInvalidAuthToken
}
