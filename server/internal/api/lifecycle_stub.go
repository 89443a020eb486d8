package api

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func unimplemented(name string) error {
	return connect.NewError(connect.CodeUnimplemented, errors.New(name+" is not implemented yet"))
}

func (s *Service) UpdateKindPolicy(context.Context, *convergev1.UpdateKindPolicyRequest) (*convergev1.UpdateKindPolicyResponse, error) {
	return nil, unimplemented("UpdateKindPolicy")
}
func (s *Service) ApplyProviderConfig(context.Context, *convergev1.ApplyProviderConfigRequest) (*convergev1.ApplyProviderConfigResponse, error) {
	return nil, unimplemented("ApplyProviderConfig")
}
func (s *Service) GetProviderConfig(context.Context, *convergev1.GetProviderConfigRequest) (*convergev1.GetProviderConfigResponse, error) {
	return nil, unimplemented("GetProviderConfig")
}
func (s *Service) ListProviderConfigs(context.Context, *convergev1.ListProviderConfigsRequest) (*convergev1.ListProviderConfigsResponse, error) {
	return nil, unimplemented("ListProviderConfigs")
}
func (s *Service) DeleteProviderConfig(context.Context, *convergev1.DeleteProviderConfigRequest) (*convergev1.DeleteProviderConfigResponse, error) {
	return nil, unimplemented("DeleteProviderConfig")
}
func (s *Service) ApplyReactorBinding(context.Context, *convergev1.ApplyReactorBindingRequest) (*convergev1.ApplyReactorBindingResponse, error) {
	return nil, unimplemented("ApplyReactorBinding")
}
func (s *Service) GetReactorBinding(context.Context, *convergev1.GetReactorBindingRequest) (*convergev1.GetReactorBindingResponse, error) {
	return nil, unimplemented("GetReactorBinding")
}
func (s *Service) ListReactorBindings(context.Context, *convergev1.ListReactorBindingsRequest) (*convergev1.ListReactorBindingsResponse, error) {
	return nil, unimplemented("ListReactorBindings")
}
func (s *Service) DeleteReactorBinding(context.Context, *convergev1.DeleteReactorBindingRequest) (*convergev1.DeleteReactorBindingResponse, error) {
	return nil, unimplemented("DeleteReactorBinding")
}
func (s *Service) GetResourceHistory(context.Context, *convergev1.GetResourceHistoryRequest) (*convergev1.GetResourceHistoryResponse, error) {
	return nil, unimplemented("GetResourceHistory")
}
func (s *Service) RollbackResource(context.Context, *convergev1.RollbackResourceRequest) (*convergev1.RollbackResourceResponse, error) {
	return nil, unimplemented("RollbackResource")
}
func (s *Service) QuarantineResource(context.Context, *convergev1.QuarantineResourceRequest) (*convergev1.QuarantineResourceResponse, error) {
	return nil, unimplemented("QuarantineResource")
}
func (s *Service) UnquarantineResource(context.Context, *convergev1.UnquarantineResourceRequest) (*convergev1.UnquarantineResourceResponse, error) {
	return nil, unimplemented("UnquarantineResource")
}
func (s *Service) ReconcileResource(context.Context, *convergev1.ReconcileResourceRequest) (*convergev1.ReconcileResourceResponse, error) {
	return nil, unimplemented("ReconcileResource")
}
func (s *Service) InvokeOperation(context.Context, *convergev1.InvokeOperationRequest) (*convergev1.InvokeOperationResponse, error) {
	return nil, unimplemented("InvokeOperation")
}
func (s *Service) GetOperation(context.Context, *convergev1.GetOperationRequest) (*convergev1.GetOperationResponse, error) {
	return nil, unimplemented("GetOperation")
}
func (s *Service) ListOperations(context.Context, *convergev1.ListOperationsRequest) (*convergev1.ListOperationsResponse, error) {
	return nil, unimplemented("ListOperations")
}
