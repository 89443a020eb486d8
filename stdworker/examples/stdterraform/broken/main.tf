# A module with a syntax error (the block is never closed): the resource
# that uses it fails terminally with terraform's message.
resource "terraform_data" "oops" {
  input = "never applied"

output "never" {
  value = 1
}
