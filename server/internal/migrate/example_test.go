package migrate_test

import (
	"context"
	"fmt"
	"log"

	"github.com/convergehq/converge/server/internal/migrate"
)

func ExampleUp() {
	ctx := context.Background()
	steps, err := migrate.Up(ctx, "postgres://converge@db.internal:5432/converge")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range steps {
		fmt.Println(s) // e.g. "up   00001_core.sql (41ms)"
	}
}
