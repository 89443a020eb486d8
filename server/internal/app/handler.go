package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/api/openapi"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/requestlog"
	"github.com/convergehq/converge/server/internal/restgate"
	"github.com/convergehq/converge/server/internal/rpcvalidate"
	"github.com/convergehq/converge/server/internal/tlsconf"
	"github.com/convergehq/converge/server/internal/tracing"
	"github.com/convergehq/converge/server/internal/ui"
)

// JSON on every transport uses the proto field names (snake_case), the
// same names manifests and resource documents use.
var (
	marshalJSON   = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	unmarshalJSON = protojson.UnmarshalOptions{}
)

// compressMinBytes: smaller messages go uncompressed. Gzip costs more CPU
// than it saves on the small, frequent messages of worker streams.
const compressMinBytes = 64 << 10

// newHandler mounts the services of the roles this process runs.
func newHandler(svc *api.Service, b *broker.Broker, pool *pgxpool.Pool, tc *tlsconf.Server, m *metrics.Metrics, az *authz.Policy,
	cl ClientLimits, log *slog.Logger) (http.Handler, error) {
	validator, err := rpcvalidate.New()
	if err != nil {
		return nil, err
	}
	// API requests are stored; a worker's results are judged as its
	// task's outcome instead (a value that cannot be stored fails the task).
	apiValidator, err := rpcvalidate.New(rpcvalidate.RequireStorable())
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if svc != nil {
		path, h := convergev1connect.NewControlServiceHandler(svc,
			connect.WithInterceptors(tracing.Interceptor(), requestlog.Interceptor(log), m.Interceptor(), apiValidator, svc.DryRunner(), svc.Authorizer(az), svc.ReadRouter()),
			connect.WithCodec(jsonCodec{}),
			connect.WithCompressMinBytes(compressMinBytes),
			connect.WithReadMaxBytes(limits.MaxRequestBytes))
		transcoder, err := vanguard.NewTranscoder([]*vanguard.Service{vanguard.NewService(path, h)},
			vanguard.WithCodec(func(res vanguard.TypeResolver) vanguard.Codec {
				c := vanguard.NewJSONCodec(res)
				c.MarshalOptions.UseProtoNames = true
				return restJSONCodec{c}
			}))
		if err != nil {
			return nil, err
		}
		routes, err := restgate.Routes(convergev1.File_converge_v1_control_proto.Services().ByName("ControlService"))
		if err != nil {
			return nil, err
		}
		gate := restgate.New(restgate.Config{Routes: routes, RPCPrefix: path,
			MaxBodyBytes: limits.MaxRequestBytes, BodyTimeout: cl.BodyTimeout}, transcoder)
		// Over TLS, every API path admits only the API audience's SPIFFE IDs.
		guarded := func(h http.Handler) http.Handler {
			return tlsconf.Guard(tlsconf.AudienceAPI, tc.Allowlist(tlsconf.AudienceAPI), h)
		}
		mux.Handle(path, guarded(gate))
		mux.Handle("/api/v1/", guarded(gate))
		watch, err := restgate.NewRoute(http.MethodGet, "/api/v1/watch", "",
			convergev1.File_converge_v1_control_proto.Services().ByName("ControlService").Methods().ByName("Watch"))
		if err != nil {
			return nil, err
		}
		watchGate := restgate.New(restgate.Config{Routes: []*restgate.Route{watch}, MaxBodyBytes: limits.MaxRequestBytes, BodyTimeout: cl.BodyTimeout},
			api.RequireRead(az, "Watch", svc.ServeWatchNDJSON(apiValidator.Check)))
		mux.Handle("/api/v1/watch", guarded(watchGate))
		mux.Handle("GET /openapi.json", guarded(openapi.Handler()))
		// The UI takes every path nothing more specific claims; it calls
		// the API from the browser with the browser's own credentials.
		mux.Handle("/", guarded(ui.Handler()))
	}
	if b != nil {
		path, h := convergev1connect.NewWorkerServiceHandler(b,
			connect.WithInterceptors(m.Interceptor(), validator),
			connect.WithCompressMinBytes(compressMinBytes),
			connect.WithReadMaxBytes(limits.MaxWorkerMessageBytes))
		mux.Handle(path, tlsconf.Guard(tlsconf.AudienceWorker, tc.Allowlist(tlsconf.AudienceWorker), h))
	}
	mountHealth(mux, pool)
	return requestlog.Middleware(log, mux), nil
}

// mountHealth serves liveness (/healthz: the process answers; it never
// touches the database) and readiness (/readyz: the database answers a ping
// within 2 s) on mux. Both the API listener and the metrics listener serve
// them: behind mTLS, probes reach the plaintext metrics port.
func mountHealth(mux *http.ServeMux, pool *pgxpool.Pool) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := pool.Ping(ctx); err != nil {
			http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// restJSONCodec is vanguard's JSON codec with decoding errors marked as
// the client's: vanguard passes a body that does not decode into a field
// (POST /api/v1/kinds with a bad manifest) on unmarked, which it answers
// with Unknown (HTTP 500) instead of InvalidArgument (400).
type restJSONCodec struct{ *vanguard.JSONCodec }

func (c restJSONCodec) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.JSONCodec.Unmarshal(data, msg); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("request body (%s): %w", msg.ProtoReflect().Descriptor().Name(), err))
	}
	return nil
}

func (c restJSONCodec) UnmarshalField(data []byte, msg proto.Message, field protoreflect.FieldDescriptor) error {
	if err := c.JSONCodec.UnmarshalField(data, msg, field); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: %w", field.Name(), err))
	}
	return nil
}

// jsonCodec is Connect's JSON codec with proto field names.
type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }

func (jsonCodec) Marshal(v any) ([]byte, error) {
	return marshalJSON.Marshal(v.(proto.Message))
}

func (jsonCodec) Unmarshal(data []byte, v any) error {
	return unmarshalJSON.Unmarshal(data, v.(proto.Message))
}
