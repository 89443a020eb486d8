package api_test

import (
	"testing"

	"github.com/convergehq/converge/server/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
