package devpg_test

import (
	"context"
	"fmt"
	"log"

	"github.com/convergehq/converge/server/internal/devpg"
)

func ExampleStart() {
	ctx := context.Background()
	c, err := devpg.Start(ctx, devpg.Options{
		Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"},
	})
	if err != nil {
		log.Fatal(err) // names what to install when PostgreSQL is missing
	}
	defer c.Stop()
	if err := c.CreateDatabase(ctx, "converge", ""); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.URL("converge")) // postgres://postgres@127.0.0.1:<port>/converge?sslmode=disable
}
