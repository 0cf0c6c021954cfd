package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// defaultKustomization is where the default install names its image.
const defaultKustomization = "manifests/kustomization.yaml"

// manifestImage is the image the default install deploys: the images:
// entry of its kustomization named nhc-controller. It is the tag make image
// gives the image, so that the image built is the image the manifests run
// (one source of truth; a release sets it).
func manifestImage(kustomization string) (string, error) {
	data, err := os.ReadFile(kustomization)
	if err != nil {
		return "", err
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", fmt.Errorf("%s: %w", kustomization, err)
	}
	for _, image := range k.Images {
		if image.Name != "nhc-controller" {
			continue
		}
		name, tag := image.NewName, image.NewTag
		if name == "" {
			name = image.Name
		}
		if tag == "" {
			tag = "latest"
		}
		return name + ":" + tag, nil
	}
	return "", fmt.Errorf("%s names no image nhc-controller", kustomization)
}
