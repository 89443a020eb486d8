# A small root module that needs no provider download: terraform_data,
# locals and outputs only, so the demo runs offline. A real module would use
# a cloud provider the same way; stdworker does not care which.
variable "site" {
  description = "The site's name."
  type        = string
}

variable "replicas" {
  description = "How many web servers."
  type        = number
  default     = 1
}

locals {
  hostname = "${var.site}.example.com"
  servers  = [for i in range(var.replicas) : "${var.site}-web-${i}"]
}

resource "terraform_data" "site" {
  input = {
    hostname = local.hostname
    servers  = local.servers
  }
}

output "url" {
  value = "https://${terraform_data.site.output.hostname}/"
}

output "servers" {
  value = terraform_data.site.output.servers
}

output "admin_token" {
  value     = sha256("${var.site}-admin")
  sensitive = true
}
