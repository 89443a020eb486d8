# Parses, but refers to a local value that does not exist: terraform
# validate rejects it.
output "x" {
  value = local.nope
}
