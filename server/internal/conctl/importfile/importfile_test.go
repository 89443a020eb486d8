package importfile

import (
	"strings"
	"testing"
)

func TestParseCSV(t *testing.T) {
	rows, err := Parse("rows.csv", []byte("kind,name,id,policy,spec\n"+
		"net.vpc,main,vpc-0abc,,\n"+
		"\n"+
		"net.vpc, edge ,vpc-0def,full,\"{\"\"cidr\"\": \"\"10.1.0.0/16\"\"}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ID != "vpc-0abc" || rows[0].Line != 2 || rows[1].Name != "edge" ||
		rows[1].Policy != "full" || string(rows[1].Spec) != `{"cidr": "10.1.0.0/16"}` || rows[1].Line != 4 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestParseJSONLines(t *testing.T) {
	rows, err := Parse("stdin", []byte(`{"kind": "net.vpc", "name": "main", "id": "vpc-0abc", "kind_version": 2}`+"\n\n"+
		`{"kind": "net.vpc", "name": "edge", "id": "vpc-0def", "namespace": "team-a", "spec": {"cidr": "10.1.0.0/16"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].KindVersion != 2 || rows[1].Namespace != "team-a" || rows[1].Line != 3 || len(rows[1].Spec) == 0 {
		t.Fatalf("rows %+v", rows)
	}
}

// TestParseErrors: each problem names the row's line and the field.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, source, data, want string }{
		{"no rows", "rows.csv", "kind,name,id\n", "rows.csv: no rows"},
		{"missing column", "rows.csv", "kind,name\nnet.vpc,main\n", `rows.csv: row at line 1: header: no "id" column`},
		{"unknown column", "rows.csv", "kind,name,id,colour\n", `rows.csv: row at line 1: header: column 4 "colour" is not one of`},
		{"empty id", "rows.csv", "kind,name,id\nnet.vpc,main,\n", "rows.csv: row at line 2: id: empty"},
		{"bad policy", "rows.csv", "kind,name,id,policy\nnet.vpc,main,x,watch\n", `rows.csv: row at line 2: policy: "watch" is not one of full, observe`},
		{"bad version", "rows.csv", "kind,name,id,kind_version\nnet.vpc,main,x,0\n", `rows.csv: row at line 2: kind_version: "0" is not a version`},
		{"spec not an object", "rows.csv", "kind,name,id,spec\nnet.vpc,main,x,[1]\n", "rows.csv: row at line 2: spec: must be a JSON object"},
		{"too many fields", "rows.csv", "kind,name,id\nnet.vpc,main,x,y\n", "rows.csv: row at line 2: 4 fields, but the header names 3 columns"},
		{"duplicate name", "rows.csv", "kind,name,id\nnet.vpc,main,x\nnet.vpc,main,y\n", "rows.csv: row at line 3: name: net.vpc/main is already imported by the row at line 2"},
		{"duplicate id", "rows.csv", "kind,name,id\nnet.vpc,a,x\nnet.vpc,b,x\n", `rows.csv: row at line 3: id: "x" is already imported as a net.vpc by the row at line 2`},
		{"json unknown field", "rows.jsonl", `{"kind":"k","name":"n","id":"i","colour":"red"}`, "rows.jsonl: row at line 1: colour: not a field of a row"},
		{"json not a string", "rows.jsonl", `{"kind":"k","name":5,"id":"i"}`, "rows.jsonl: row at line 1: name: must be a string, not 5"},
		{"json not an object", "rows.jsonl", `{"kind":"k","name":"n","id":"i"}` + "\n[1]", "rows.jsonl: row at line 2: not a JSON object"},
		{"unterminated quote", "rows.csv", "kind,name,id\nnet.vpc,\"main,x\n", "rows.csv: row at line 2: invalid CSV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.source, []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// FuzzParse: no input panics, and every row returned has what a row must.
func FuzzParse(f *testing.F) {
	f.Add("rows.csv", []byte("kind,name,id,policy,spec\nnet.vpc,main,vpc-0abc,observe,\"{}\"\n"))
	f.Add("rows.jsonl", []byte(`{"kind":"net.vpc","name":"main","id":"vpc-0abc","kind_version":1,"spec":{"a":[1]}}`+"\n"))
	f.Add("stdin", []byte("kind,id,name\n\"a\"\"b\",c,d\n,,\n"))
	f.Add("stdin", []byte(`{"kind":1}`))
	f.Fuzz(func(t *testing.T, source string, data []byte) {
		rows, err := Parse(source, data)
		if err != nil {
			if rows != nil {
				t.Fatalf("rows %v with error %v", rows, err)
			}
			return
		}
		if len(rows) == 0 {
			t.Fatal("no rows and no error")
		}
		for _, r := range rows {
			if r.Kind == "" || r.Name == "" || r.ID == "" || len(r.ID) > MaxIDLength || r.Line < 1 {
				t.Fatalf("row %+v lacks what a row must have", r)
			}
		}
	})
}
