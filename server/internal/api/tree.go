package api

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// GetResourceTree returns a composite and its descendants.
func (s *Service) GetResourceTree(ctx context.Context, req *convergev1.GetResourceTreeRequest) (*convergev1.GetResourceTreeResponse, error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("GetResourceTree is not implemented yet"))
}

// GetResourceGraph returns a composite's children and edges.
func (s *Service) GetResourceGraph(ctx context.Context, req *convergev1.GetResourceGraphRequest) (*convergev1.GetResourceGraphResponse, error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("GetResourceGraph is not implemented yet"))
}
